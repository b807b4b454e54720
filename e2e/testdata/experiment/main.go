// Command experiment is the e2e test's server for probe's experiment:
// /config?page=N decodes the same constant settings on every request,
// whatever the page (the reply changes with the page and carries a
// nonce); /user?name=X, the trap, decodes the settings user X saved, a
// document of another size per user; /sorted?user=N, the trap of equal
// cost, sorts user N's own 20,000 numbers: the same work for every user,
// another reply for each. /debug/pprof/ serves its profiles.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	mrand "math/rand/v2"
	"net/http"
	_ "net/http/pprof"
	"slices"
	"strconv"
	"strings"
)

type entry struct {
	Name  string   `json:"name"`
	Value float64  `json:"value"`
	Tags  []string `json:"tags"`
}

// settingsJSON is a JSON document of n settings.
func settingsJSON(n int) []byte {
	es := make([]entry, n)
	for i := range es {
		es[i] = entry{Name: fmt.Sprintf("setting-%d", i), Value: float64(i) * 1.5, Tags: []string{"a", "b", "c"}}
	}
	b, _ := json.Marshal(es)
	return b
}

// decodeSettings is the heavy work of both endpoints: the same function,
// so that only what it is fed tells them apart.
func decodeSettings(doc []byte) int {
	var v []map[string]any
	if err := json.Unmarshal(doc, &v); err != nil {
		panic(err)
	}
	return len(v)
}

// usersNumbers are user n's own numbers, as the user stored them: 20,000
// of them for every user, each user's drawn from a source seeded by n.
func usersNumbers(n int) []int {
	r := mrand.New(mrand.NewPCG(uint64(n), 0x5eed))
	out := make([]int, 20000)
	for i := range out {
		out[i] = r.IntN(1_000_000)
	}
	return out
}

// sortedOf is the user's numbers in order, sorted again on every request
// (a copy: the stored order stays as the user left it).
func sortedOf(stored []int) []int {
	nums := slices.Clone(stored)
	slices.Sort(nums)
	return nums
}

func nonce() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address (loopback)")
	flag.Parse()
	constant := settingsJSON(800)
	saved := map[string][]byte{"ann": settingsJSON(150), "bob": settingsJSON(600), "cy": settingsJSON(1500)}
	http.HandleFunc("/config", func(w http.ResponseWriter, r *http.Request) {
		n := decodeSettings(constant)
		fmt.Fprintf(w, "page %s of %d settings, nonce %s\n", r.URL.Query().Get("page"), n, nonce())
	})
	http.HandleFunc("/user", func(w http.ResponseWriter, r *http.Request) {
		doc, ok := saved[r.URL.Query().Get("name")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "%d settings of %s, nonce %s\n", decodeSettings(doc), r.URL.Query().Get("name"), nonce())
	})
	numbers := map[int][]int{}
	for n := 1; n <= 12; n++ {
		numbers[n] = usersNumbers(n)
	}
	http.HandleFunc("/sorted", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("user"))
		stored, ok := numbers[n]
		if !ok {
			http.NotFound(w, r)
			return
		}
		nums := sortedOf(stored)
		first := make([]string, 20)
		for i := range first {
			first[i] = strconv.Itoa(nums[i])
		}
		fmt.Fprintf(w, "user %d: %d numbers, median %d, largest %d; first: %s\n", n, len(nums), nums[len(nums)/2], nums[len(nums)-1],
			strings.Join(first, " "))
	})
	log.Fatal(http.ListenAndServe(*addr, nil))
}
