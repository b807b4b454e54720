package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/csv"
	"encoding/gob"
	"encoding/xml"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"html/template"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/yosida95/uritemplate/v3"
	"golang.org/x/text/collate"
	"golang.org/x/text/language"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// The unnamed endpoints: per-request work of kinds no rule of probe's
// catalog names, on constant data, each reply with a fresh nonce or
// timestamp so that no two replies are byte-identical. probe must find
// them by its mechanism (replies the same but for fragments, and the CPU
// that made them), not by a list of libraries. Their clean twins do the
// same work on what the request brings: its body, its query, the data a
// user stored.

// unnamed is the constant data the waste endpoints work on, made at start.
type unnamed struct {
	rates     string   // a CSV table
	gobBlob   []byte   // a gob-encoded catalog
	xmlConfig []byte   // an XML configuration
	certs     [][]byte // a bundle of DER certificates
	goSource  string   // a Go file
	text      string   // text with accents to normalise
	collWords []string // words to collate
	crons     []string // cron expressions
	uriTpls   []string // URI templates
	pairs     []string // replacement pairs for strings.NewReplacer
	page      *template.Template
	pageData  []note
	protoData map[string]any

	userCrons map[string][]string // per user: their stored schedules
	userPairs map[string][]string // per user: their stored replacements
	userTpls  map[string][]string // per user: their stored URI templates
}

var zooUsers = []string{"ann", "bob", "cy", "dee", "eve", "fay", "gus", "hal"}

type catalogItem struct {
	SKU    string
	Name   string
	Price  float64
	Tags   []string
	Stock  map[string]int
	Listed time.Time
}

type xmlConfig struct {
	XMLName  xml.Name `xml:"config"`
	Name     string   `xml:"name,attr"`
	Backends []struct {
		Name    string   `xml:"name,attr"`
		URL     string   `xml:"url"`
		Weight  int      `xml:"weight"`
		Headers []string `xml:"headers>header"`
	} `xml:"backends>backend"`
}

type asn1Entry struct {
	ID    int
	Name  string
	Roles []string
	Since time.Time
}

func newUnnamed(notes []note) (*unnamed, error) {
	r := mrand.New(mrand.NewPCG(7, 9))
	u := &unnamed{userCrons: map[string][]string{}, userPairs: map[string][]string{}, userTpls: map[string][]string{}}
	var b strings.Builder
	for i := range 1500 {
		fmt.Fprintf(&b, "EUR,C%04d,%d.%04d,\"%s, %s\"\n", i, r.IntN(9), r.IntN(10000), words[r.IntN(len(words))], words[r.IntN(len(words))])
	}
	u.rates = b.String()

	var items []catalogItem
	for i := range 600 {
		items = append(items, catalogItem{SKU: fmt.Sprintf("SKU-%05d", i), Name: words[i%len(words)] + " " + words[(i*7)%len(words)],
			Price: float64(r.IntN(10000)) / 100, Tags: []string{tags[i%len(tags)], tags[(i*3)%len(tags)]},
			Stock: map[string]int{"berlin": r.IntN(50), "paris": r.IntN(50)}, Listed: time.Date(2024, 1, 1+i%28, 0, 0, 0, 0, time.UTC)})
	}
	var gb bytes.Buffer
	if err := gob.NewEncoder(&gb).Encode(items); err != nil {
		return nil, err
	}
	u.gobBlob = gb.Bytes()

	b.Reset()
	b.WriteString(`<config name="edge"><backends>`)
	for i := range 400 {
		fmt.Fprintf(&b, `<backend name="b%d"><url>http://10.0.%d.%d:8080/</url><weight>%d</weight><headers><header>X-A: %d</header><header>X-B: %s</header></headers></backend>`,
			i, i/250, i%250, 1+i%5, i, words[i%len(words)])
	}
	b.WriteString(`</backends></config>`)
	u.xmlConfig = []byte(b.String())

	key, err := ecdsa.GenerateKey(elliptic.P256(), rrand{r})
	if err != nil {
		return nil, err
	}
	for i := range 40 {
		tpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 1)), Subject: pkix.Name{CommonName: fmt.Sprintf("zoo-%d.example", i), Organization: []string{"Zoo"}},
			DNSNames: []string{fmt.Sprintf("zoo-%d.example", i), fmt.Sprintf("*.zoo-%d.example", i)}, NotBefore: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
			NotAfter: time.Date(2034, 1, 1, 0, 0, 0, 0, time.UTC), KeyUsage: x509.KeyUsageDigitalSignature}
		der, err := x509.CreateCertificate(rrand{r}, tpl, tpl, &key.PublicKey, key)
		if err != nil {
			return nil, err
		}
		u.certs = append(u.certs, der)
	}

	b.Reset()
	b.WriteString("package zoo\n\nimport \"strings\"\n\n")
	for i := range 120 {
		fmt.Fprintf(&b, "// F%d joins its words.\nfunc F%d(a, b string, n int) string {\n\tif n > %d {\n\t\treturn strings.Repeat(a, n) + b\n\t}\n\tfor i := 0; i < n; i++ {\n\t\ta += b\n\t}\n\treturn a\n}\n\n", i, i, i)
	}
	u.goSource = b.String()

	b.Reset()
	accented := []string{"Crème", "brûlée", "Ångström", "façade", "naïve", "Straße", "ﬁnance", "Ⅻ", "Œuvre", "jalapeño", "Zürich", "Øresund"}
	for i := range 3000 {
		b.WriteString(accented[i%len(accented)])
		b.WriteByte(' ')
	}
	u.text = b.String()
	for i := range 300 {
		u.collWords = append(u.collWords, accented[i%len(accented)]+words[i%len(words)])
	}

	minutes := []string{"*", "*/5", "0", "15", "30", "0,30", "5-10", "*/15"}
	hours := []string{"*", "0", "9-17", "*/2", "6,18", "12"}
	dows := []string{"*", "1-5", "0,6", "1", "3"}
	for i := range 400 {
		u.crons = append(u.crons, fmt.Sprintf("%s %s * * %s", minutes[i%len(minutes)], hours[i%len(hours)], dows[i%len(dows)]))
	}
	for _, name := range zooUsers {
		var cs []string
		for i := range 400 {
			cs = append(cs, fmt.Sprintf("%d %s * * %s", (i+len(name)*7)%60, hours[(i+int(name[0]))%len(hours)], dows[i%len(dows)]))
		}
		u.userCrons[name] = cs
		var ps []string
		for i := range 300 {
			ps = append(ps, fmt.Sprintf("{%s%d}", name, i), fmt.Sprintf("<%s-%d>", strings.ToUpper(name), i*3))
		}
		u.userPairs[name] = ps
		var ts []string
		for i := range 60 {
			ts = append(ts, fmt.Sprintf("/%s/{folder}/%d{/item}{?q,page,sort}{&%s}", name, i, name))
		}
		u.userTpls[name] = ts
	}
	for i := range 60 {
		u.uriTpls = append(u.uriTpls, fmt.Sprintf("/api/v%d/{org}/repos{/repo}/issues{?state,page,per_page}{&sort%d}", i%3+1, i))
	}
	for i := range 400 {
		u.pairs = append(u.pairs, fmt.Sprintf("{{%s_%d}}", words[i%len(words)], i), fmt.Sprintf("%s-%d", strings.ToUpper(words[i%len(words)]), i))
	}

	u.page = template.Must(template.New("page").Parse(`<html><body><h1>Notes</h1><table>{{range .}}<tr><td>{{.ID}}</td><td>{{.Title}}</td><td>{{range .Tags}}<span class="tag">{{.}}</span>{{end}}</td><td>{{.Date.Format "2006-01-02"}}</td><td>{{.Words}}</td></tr>{{end}}</table></body></html>`))
	u.pageData = notes[:60]
	u.protoData = map[string]any{}
	for i := range 250 {
		u.protoData[fmt.Sprintf("key%03d", i)] = map[string]any{"name": words[i%len(words)], "n": float64(i), "on": i%2 == 0, "list": []any{"a", float64(i), "c"}}
	}
	return u, nil
}

// rrand makes a math/rand generator a reader, so that keys and
// certificates are the same on every start.
type rrand struct{ r *mrand.Rand }

func (r rrand) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.r.Uint32())
	}
	return len(p), nil
}

// stamped writes a page of lines with a fresh nonce and the time: the
// reply is the same every time but for those.
func stamped(w http.ResponseWriter, title string, lines []string) {
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprintf(w, "<html><head><meta name=\"nonce\" content=\"%016x\"><title>%s</title></head><body><p>generated %s</p><ul>\n", nonce(), title, time.Now().UTC().Format(time.RFC3339Nano))
	for _, l := range lines {
		fmt.Fprintf(w, "<li>%s</li>\n", template.HTMLEscapeString(l))
	}
	io.WriteString(w, "</ul></body></html>\n")
}

func firstN(lines []string, n int) []string { return lines[:min(n, len(lines))] }

func (u *unnamed) waste() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"/waste/unnamed/csv":         u.csvRates,
		"/waste/unnamed/gob":         u.gobCatalog,
		"/waste/unnamed/xml-decode":  u.xmlBackends,
		"/waste/unnamed/asn1":        u.asn1Roster,
		"/waste/unnamed/replacer":    u.replacerPage,
		"/waste/unnamed/collate":     u.collatedKeys,
		"/waste/unnamed/norm":        u.normalisedText,
		"/waste/unnamed/bigint":      u.bigPower,
		"/waste/unnamed/cron":        u.cronSchedule,
		"/waste/unnamed/uritemplate": u.uriLinks,
		"/waste/unnamed/protobuf":    u.protoBlob,
		"/waste/unnamed/x509":        u.certBundle,
		"/waste/unnamed/goparser":    u.goFuncs,
		"/waste/unnamed/render":      u.renderedTable,
	}
}

func (u *unnamed) csvRates(w http.ResponseWriter, r *http.Request) {
	recs, err := csv.NewReader(strings.NewReader(u.rates)).ReadAll()
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	stamped(w, "rates", rateLines(recs))
}

func rateLines(recs [][]string) []string {
	var lines []string
	var sum float64
	for _, rec := range recs {
		v, _ := strconv.ParseFloat(rec[2], 64)
		sum += v
		if len(lines) < 40 {
			lines = append(lines, rec[1]+" "+rec[2]+" "+rec[3])
		}
	}
	return append(lines, fmt.Sprintf("%d rates, sum %.2f", len(recs), sum))
}

func (u *unnamed) gobCatalog(w http.ResponseWriter, r *http.Request) {
	var items []catalogItem
	if err := gob.NewDecoder(bytes.NewReader(u.gobBlob)).Decode(&items); err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	var lines []string
	for _, it := range firstN2(items, 40) {
		lines = append(lines, fmt.Sprintf("%s %s %.2f %d", it.SKU, it.Name, it.Price, it.Stock["berlin"]))
	}
	stamped(w, "catalog", lines)
}

func firstN2[T any](s []T, n int) []T { return s[:min(n, len(s))] }

func (u *unnamed) xmlBackends(w http.ResponseWriter, r *http.Request) {
	var cfg xmlConfig
	if err := xml.Unmarshal(u.xmlConfig, &cfg); err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	stamped(w, cfg.Name, backendLines(cfg))
}

func backendLines(cfg xmlConfig) []string {
	var lines []string
	for _, b := range firstN2(cfg.Backends, 40) {
		lines = append(lines, fmt.Sprintf("%s %s weight %d", b.Name, b.URL, b.Weight))
	}
	return append(lines, fmt.Sprintf("%d backends", len(cfg.Backends)))
}

func (u *unnamed) asn1Roster(w http.ResponseWriter, r *http.Request) {
	var roster []asn1Entry
	for i := range 400 {
		roster = append(roster, asn1Entry{ID: i, Name: words[i%len(words)], Roles: []string{"reader", tags[i%len(tags)]}, Since: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)})
	}
	der, err := asn1.Marshal(roster)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	enc := base64.StdEncoding.EncodeToString(der)
	stamped(w, "roster", []string{fmt.Sprintf("%d bytes of DER", len(der)), enc[:min(1200, len(enc))]})
}

func (u *unnamed) replacerPage(w http.ResponseWriter, r *http.Request) {
	rep := strings.NewReplacer(u.pairs...)
	var lines []string
	for i := range 30 {
		lines = append(lines, rep.Replace(fmt.Sprintf("Dear {{%s_%d}}, your {{%s_%d}} is ready.", words[i%len(words)], i, words[(i+1)%len(words)], i+1)))
	}
	stamped(w, "letters", lines)
}

func (u *unnamed) collatedKeys(w http.ResponseWriter, r *http.Request) {
	c := collate.New(language.German, collate.Loose)
	var buf collate.Buffer
	first := ""
	var lines []string
	for _, word := range u.collWords {
		k := c.KeyFromString(&buf, word)
		if first == "" || c.CompareString(word, first) < 0 {
			first = word
		}
		if len(lines) < 30 {
			lines = append(lines, fmt.Sprintf("%s %x", word, k[:min(6, len(k))]))
		}
		buf.Reset()
	}
	stamped(w, "collated", append(lines, "first: "+first))
}

func (u *unnamed) normalisedText(w http.ResponseWriter, r *http.Request) {
	decomposed, _, _ := transform.String(norm.NFKD, u.text)
	composed, _, _ := transform.String(norm.NFC, decomposed)
	stamped(w, "normalised", []string{fmt.Sprintf("%d bytes decomposed, %d composed", len(decomposed), len(composed)), composed[:1000]})
}

func (u *unnamed) bigPower(w http.ResponseWriter, r *http.Request) {
	n := new(big.Int).Exp(big.NewInt(7), big.NewInt(40000), nil)
	s := n.Text(10)
	stamped(w, "7^40000", []string{fmt.Sprintf("%d digits", len(s)), s[:1200]})
}

func (u *unnamed) cronSchedule(w http.ResponseWriter, r *http.Request) {
	stamped(w, "schedule", nextRuns(u.crons))
}

// nextRuns parses each cron expression and names its next three runs
// after a fixed time.
func nextRuns(exprs []string) []string {
	from := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	var lines []string
	for _, e := range exprs {
		s, err := parseCron(e)
		if err != nil {
			lines = append(lines, e+": "+err.Error())
			continue
		}
		if len(lines) == 40 {
			continue
		}
		t := from
		var next []string
		for range 3 {
			t = s.next(t)
			next = append(next, t.Format("Mon 02 15:04"))
		}
		lines = append(lines, e+" → "+strings.Join(next, ", "))
	}
	return lines
}

func (u *unnamed) uriLinks(w http.ResponseWriter, r *http.Request) {
	stamped(w, "links", expandAll(u.uriTpls))
}

func expandAll(tpls []string) []string {
	vals := uritemplate.Values{}
	vals.Set("org", uritemplate.String("probehq"))
	vals.Set("repo", uritemplate.String("probe"))
	vals.Set("folder", uritemplate.String("inbox"))
	vals.Set("item", uritemplate.String("42"))
	vals.Set("state", uritemplate.String("open"))
	vals.Set("page", uritemplate.String("2"))
	var lines []string
	for _, s := range tpls {
		for range 4 {
			t, err := uritemplate.New(s)
			if err != nil {
				return append(lines, err.Error())
			}
			if x, err := t.Expand(vals); err == nil && len(lines) < 40 {
				lines = append(lines, x)
			}
		}
	}
	return lines
}

func (u *unnamed) protoBlob(w http.ResponseWriter, r *http.Request) {
	st, err := structpb.NewStruct(u.protoData)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(st)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	enc := base64.StdEncoding.EncodeToString(b)
	stamped(w, "proto", []string{fmt.Sprintf("%d bytes", len(b)), enc[:min(1200, len(enc))]})
}

func (u *unnamed) certBundle(w http.ResponseWriter, r *http.Request) {
	var lines []string
	for range 3 {
		lines = lines[:0]
		for _, der := range u.certs {
			c, err := x509.ParseCertificate(der)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			lines = append(lines, fmt.Sprintf("%s %v until %s", c.Subject.CommonName, c.DNSNames, c.NotAfter.Format("2006-01-02")))
		}
	}
	stamped(w, "trust", lines)
}

func (u *unnamed) goFuncs(w http.ResponseWriter, r *http.Request) {
	f, err := parser.ParseFile(token.NewFileSet(), "zoo.go", u.goSource, parser.ParseComments)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	var lines []string
	ast.Inspect(f, func(n ast.Node) bool {
		if fd, ok := n.(*ast.FuncDecl); ok && len(lines) < 40 {
			lines = append(lines, fd.Name.Name+" "+fd.Doc.Text())
		}
		return true
	})
	stamped(w, "funcs", lines)
}

func (u *unnamed) renderedTable(w http.ResponseWriter, r *http.Request) {
	var b bytes.Buffer
	if err := u.page.Execute(&b, u.pageData); err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprintf(w, "<!-- nonce %016x -->\n", nonce())
	w.Write(b.Bytes())
}

// The clean twins: the same work on what varies with the request.
func (u *unnamed) clean() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"/clean/unnamed/csv-body":      u.uploadedRates,
		"/clean/unnamed/csv-query":     u.queriedRates,
		"/clean/unnamed/xml-body":      u.uploadedConfig,
		"/clean/unnamed/bigint":        u.askedPower,
		"/clean/unnamed/norm-query":    u.normalisedQuery,
		"/clean/unnamed/user-cron":     u.userSchedule,
		"/clean/unnamed/user-replacer": u.userLetters,
		"/clean/unnamed/user-uri":      u.userLinks,
	}
}

func (u *unnamed) uploadedRates(w http.ResponseWriter, r *http.Request) {
	recs, err := csv.NewReader(r.Body).ReadAll()
	if err != nil || len(recs) == 0 || len(recs[0]) < 4 {
		http.Error(w, fmt.Sprint("want a CSV of four columns: ", err), 400)
		return
	}
	stamped(w, "your rates", rateLines(recs))
}

// queriedRates parses the CSV the query carries: rows split by '|',
// fields by ';'.
func (u *unnamed) queriedRates(w http.ResponseWriter, r *http.Request) {
	cr := csv.NewReader(strings.NewReader(strings.ReplaceAll(r.URL.Query().Get("rows"), "|", "\n")))
	cr.Comma = ';'
	recs, err := cr.ReadAll()
	if err != nil || len(recs) == 0 || len(recs[0]) < 4 {
		http.Error(w, fmt.Sprint("want rows=a;b;c;d|…: ", err), 400)
		return
	}
	stamped(w, "your rates", rateLines(recs))
}

func (u *unnamed) uploadedConfig(w http.ResponseWriter, r *http.Request) {
	var cfg xmlConfig
	if err := xml.NewDecoder(r.Body).Decode(&cfg); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	stamped(w, cfg.Name, backendLines(cfg))
}

func (u *unnamed) askedPower(w http.ResponseWriter, r *http.Request) {
	e, err := strconv.Atoi(r.URL.Query().Get("n"))
	if err != nil || e < 0 || e > 100000 {
		http.Error(w, "want n=0…100000", 400)
		return
	}
	s := new(big.Int).Exp(big.NewInt(7), big.NewInt(int64(e)), nil).Text(10)
	stamped(w, "7^n", []string{fmt.Sprintf("%d digits", len(s)), s[:min(1200, len(s))]})
}

func (u *unnamed) normalisedQuery(w http.ResponseWriter, r *http.Request) {
	q := strings.Repeat(r.URL.Query().Get("text")+" ", 200)
	decomposed, _, _ := transform.String(norm.NFKD, q)
	composed, _, _ := transform.String(norm.NFC, decomposed)
	stamped(w, "normalised", []string{fmt.Sprintf("%d bytes decomposed, %d composed", len(decomposed), len(composed)), composed[:min(1000, len(composed))]})
}

func (u *unnamed) userSchedule(w http.ResponseWriter, r *http.Request) {
	crons, ok := u.userCrons[r.URL.Query().Get("user")]
	if !ok {
		http.Error(w, "no such user", 404)
		return
	}
	stamped(w, "your schedule", nextRuns(crons))
}

func (u *unnamed) userLetters(w http.ResponseWriter, r *http.Request) {
	user := r.URL.Query().Get("user")
	pairs, ok := u.userPairs[user]
	if !ok {
		http.Error(w, "no such user", 404)
		return
	}
	rep := strings.NewReplacer(pairs...)
	var lines []string
	for i := range 30 {
		lines = append(lines, rep.Replace(fmt.Sprintf("Dear {%s%d}, your {%s%d} is ready.", user, i, user, i+1)))
	}
	stamped(w, "your letters", lines)
}

func (u *unnamed) userLinks(w http.ResponseWriter, r *http.Request) {
	tpls, ok := u.userTpls[r.URL.Query().Get("user")]
	if !ok {
		http.Error(w, "no such user", 404)
		return
	}
	stamped(w, "your links", expandAll(tpls))
}
