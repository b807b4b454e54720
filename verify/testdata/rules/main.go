// A server that compiles a constant rule list on every request: the
// load-time finding --verify memoises by each rule's value.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	_ "net/http/pprof" // the profile --verify takes the hot site from
	"regexp"
	"strings"
)

// rules never change after start: compiling them per request is waste.
var rules = []string{
	`^(?i)select\s+.+\s+from\s+\w+(\s+where\s+.+)?$`,
	`(?i)<script[^>]*>.*?</script>`,
	`\b(?:\d{1,3}\.){3}\d{1,3}\b`,
	`[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}`,
	`(?i)\b(union|insert|update|delete|drop)\b.*\b(table|from|into)\b`,
	`^/(api|v[0-9]+)/[a-z]+(/[0-9a-f-]{8,})?$`,
	`(?i)(password|passwd|secret|token)=[^&\s]+`,
	`\$\{[^}]{1,64}\}`,
	`(?:%[0-9a-fA-F]{2}){4,}`,
	`(?i)\b(on(error|load|click|mouseover))\s*=`,
	`^\s*[-+]?\d+(\.\d+)?([eE][-+]?\d+)?\s*$`,
	`(?i)(\.\./|\.\.\\){2,}`,
	`(?i)^(get|post|put|patch|delete|head|options)\s+\S+\s+http/1\.[01]$`,
	`\b[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\b`,
	`(?i)\b(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|3[47][0-9]{13})\b`,
	`(?i)(cmd|powershell|bash|sh)(\.exe)?\s+(-c|/c)\s+`,
	`^[A-Za-z0-9+/]{20,}={0,2}$`,
	`(?i)\b(eval|exec|system|passthru)\s*\(`,
	`(?i)<(iframe|object|embed|applet)[^>]*>`,
	`(?i)\b(localhost|127\.0\.0\.1|169\.254\.169\.254)\b`,
}

func match(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	var hit []string
	for i, p := range rules {
		re := regexp.MustCompile(p) // hot: rules
		if re.MatchString(q) {
			hit = append(hit, fmt.Sprint(i))
		}
	}
	fmt.Fprintf(w, "matched [%s]\n", strings.Join(hit, ","))
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	http.HandleFunc("/rules", match)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
