package analyzers

import (
	"strings"
	"unicode"

	"github.com/probehq/probe/lib/frames"
)

// What a call does is read from its name, not from a list of libraries:
// Go names functions by verbs (Parse, Unmarshal, NewReplacer, Compile,
// Exp), and a verb says whether the result is a value that can be kept.
// A verb names a kind of work; the kind words the fix.

// workKind is a kind of work a verb names.
type workKind struct {
	does string // third person: "parses"
	fix  string // what to do when its input does not change, %s the thing
}

var (
	kindParse = &workKind{"parses", "parse %s once (at start-up, or when its source changes) and keep the parsed value; per " +
		"request only read from it"}
	kindBuild     = &workKind{"builds", "build %s once (a package-level variable or a field set at start-up) and share it between requests"}
	kindEncode    = &workKind{"encodes", "encode %s once and keep the bytes; per request write them and add only the fragment that varies"}
	kindSort      = &workKind{"sorts", "sort %s once when the data changes and keep the order"}
	kindLoad      = &workKind{"loads", "load %s once at start-up and keep it"}
	kindTransform = &workKind{"transforms", "transform %s once and keep the result"}
	kindCompute   = &workKind{"computes", "compute %s once and keep the result"}
)

// verbs maps the first word of a function's name (lower case) to its kind.
var verbs = map[string]*workKind{
	"parse": kindParse, "decode": kindParse, "unmarshal": kindParse, "read": kindParse, "scan": kindParse,
	"lex": kindParse, "tokenize": kindParse, "unquote": kindParse, "deserialize": kindParse, "unpack": kindParse,
	"compile": kindBuild, "new": kindBuild, "build": kindBuild, "make": kindBuild, "must": kindBuild, "init": kindBuild,
	"create": kindBuild, "prepare": kindBuild, "register": kindBuild,
	"encode": kindEncode, "marshal": kindEncode, "render": kindEncode, "execute": kindEncode, "format": kindEncode,
	"serialize": kindEncode, "print": kindEncode, "pack": kindEncode, "write": kindEncode, "append": kindEncode,
	"sort": kindSort, "stable": kindSort,
	"load": kindLoad, "open": kindLoad, "fetch": kindLoad, "import": kindLoad,
	"normalize": kindTransform, "transform": kindTransform, "replace": kindTransform, "convert": kindTransform,
	"fold": kindTransform, "collate": kindTransform, "compare": kindTransform, "key": kindTransform,
	"exp": kindCompute, "compute": kindCompute, "calc": kindCompute, "calculate": kindCompute, "sqrt": kindCompute,
	"mul": kindCompute, "gen": kindCompute, "generate": kindCompute, "derive": kindCompute,
}

// nameWords splits a function name's last element into lower-case words:
// "encoding/csv.(*Reader).ReadAll" gives [read all], "strings.NewReplacer"
// [new replacer], "main.parseCron" [parse cron]; a closure (func1) or a
// method-value wrapper (-fm) is its enclosing function's name.
func nameWords(fn string) []string {
	fn = frames.DisplayName(fn)
	fn = strings.TrimSuffix(fn, "-fm")
	rest := fn[len(frames.PkgPath(fn)):]
	parts := strings.Split(strings.TrimPrefix(rest, "."), ".")
	name := ""
	for i := len(parts) - 1; i >= 0; i-- {
		p := strings.Trim(parts[i], "()*")
		if p == "" || isClosureName(p) {
			continue
		}
		name = p
		break
	}
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case r == '_' || !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
			continue
		case unicode.IsUpper(r) && len(cur) > 0 && (!unicode.IsUpper(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])):
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	return words
}

func isClosureName(p string) bool {
	if strings.HasPrefix(p, "func") {
		return strings.Trim(p[4:], "0123456789") == ""
	}
	return strings.Trim(p, "0123456789") == ""
}

// verbOf is the kind of work a function's name says it does, and the thing
// it does it to ("replacer" for NewReplacer, the package's last element
// when the name says no more: "template" for template.(*Template).Parse);
// nil when its name starts with no verb.
func verbOf(fn string) (*workKind, string) {
	words := nameWords(fn)
	if len(words) == 0 {
		return nil, ""
	}
	k := verbs[words[0]]
	if k == nil {
		// Must-prefixed and To-prefixed names: MustParse, ToUpper.
		if (words[0] == "must" || words[0] == "to") && len(words) > 1 {
			k = verbs[words[1]]
			words = words[1:]
		}
		if k == nil {
			return nil, ""
		}
	}
	rest := words[1:]
	for len(rest) > 0 && prepositions[rest[0]] {
		rest = rest[1:]
	}
	thing := strings.Join(rest, " ")
	if thing == "" || thing == "all" || thing == "string" || thing == "bytes" {
		thing = thingOf(fn)
	}
	return &workKind{does: thirdPerson(words[0]), fix: k.fix}, thing
}

// notVerbs are name words that stand for a verb without being one.
var notVerbs = map[string]string{"new": "builds", "must": "builds", "init": "initialises", "exp": "computes",
	"mul": "computes", "sqrt": "computes", "calc": "computes", "gen": "generates", "stable": "sorts", "key": "computes keys of"}

// endsInRole says whether a receiver type's name ends in a role word:
// MarshalOptions, DecoderConfig.
func endsInRole(recv string) bool {
	for r := range roles {
		if strings.HasSuffix(recv, r) {
			return true
		}
	}
	return false
}

func thirdPerson(word string) string {
	if s, ok := notVerbs[word]; ok {
		return s
	}
	if strings.HasSuffix(word, "sh") || strings.HasSuffix(word, "ch") || strings.HasSuffix(word, "x") {
		return word + "es"
	}
	return word + "s"
}

var prepositions = map[string]bool{"from": true, "to": true, "of": true, "for": true, "with": true, "in": true, "by": true, "into": true}

// roles are receiver types that say how, not what: a csv Reader reads csv.
var roles = map[string]bool{"reader": true, "writer": true, "decoder": true, "encoder": true, "parser": true,
	"scanner": true, "lexer": true, "builder": true, "state": true, "buffer": true, "options": true, "config": true}

// thingOf names what a function works on by its receiver type or, for a
// plain function, its package: "csv reader", "template".
func thingOf(fn string) string {
	fn = frames.DisplayName(fn)
	pkg := frames.PkgPath(fn)
	short := pkg[strings.LastIndexByte(pkg, '/')+1:]
	if major := strings.TrimLeft(short, "v0123456789"); major == "" && strings.Contains(pkg, "/") {
		// a major version's path element: github.com/yosida95/uritemplate/v3
		p := pkg[:strings.LastIndexByte(pkg, '/')]
		short = p[strings.LastIndexByte(p, '/')+1:]
	}
	rest := strings.TrimPrefix(fn[len(pkg):], ".")
	if recv, _, ok := strings.Cut(rest, "."); ok && !isClosureName(recv) {
		recv = strings.ToLower(strings.Trim(recv, "()*"))
		if recv != short && !endsInRole(recv) {
			return short + " " + recv
		}
	}
	return short
}

// doesPhrase says what a chain of calls looks like it does: the first
// verb on it, from the outermost call inward ("parses csv reader (encoding/
// csv.(*Reader).ReadAll)"); "" when no name on it is a verb.
func doesPhrase(chain []string) (phrase string, kind *workKind, thing string) {
	for _, fn := range chain {
		if k, th := verbOf(fn); k != nil {
			return k.does + " " + th, k, th
		}
	}
	return "", nil, ""
}
