// Command h2versions is the e2e test's server for probe's frame markers
// across Go releases: it is its own module (go 1.26, the standard library
// only), so that the test builds it with Go 1.26 and with Go 1.27, whose
// HTTP/2 server moved into net/http/internal/http2. POST /work decodes the
// posted JSON (the request's own input), compiles a constant pattern (work
// that could be done once) and answers; it is served over HTTP/1.1 and h2c
// on -addr and over TLS HTTP/2 on -tls (a certificate made at start), with
// /debug/pprof/ on both.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/big"
	"net/http"
	_ "net/http/pprof"
	"regexp"
	"time"
)

const pattern = `^(?i)(select|insert|update)\s+.+\s+(from|into)\s+\w+(\s+where\s+.+)?$|<script[^>]*>.*?</script>|` +
	`\b(?:\d{1,3}\.){3}\d{1,3}\b|[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}`

func work(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Q    string   `json:"q"`
		Tags []string `json:"tags"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	re := regexp.MustCompile(pattern)
	fmt.Fprintln(w, re.MatchString(in.Q), len(in.Tags), r.Proto)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "HTTP/1.1 and h2c")
	tlsAddr := flag.String("tls", "127.0.0.1:8443", "TLS with HTTP/2")
	flag.Parse()
	http.HandleFunc("/work", work)
	plain := &http.Server{Addr: *addr, Protocols: new(http.Protocols)}
	plain.Protocols.SetHTTP1(true)
	plain.Protocols.SetUnencryptedHTTP2(true)
	cert, err := selfSigned()
	if err != nil {
		log.Fatal(err)
	}
	secure := &http.Server{Addr: *tlsAddr, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go func() { log.Fatal(secure.ListenAndServeTLS("", "")) }()
	log.Fatal(plain.ListenAndServe())
}

// selfSigned is a certificate for 127.0.0.1, made at start.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
