package main

import (
	"bytes"
	stdgzip "compress/gzip"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html/template"
	"log"
	"log/slog"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/CloudyKit/jet/v6"
	"github.com/andybalholm/brotli"
	"github.com/blevesearch/bleve/v2"
	"github.com/bytedance/sonic"
	"github.com/dlclark/regexp2"
	"github.com/flosch/pongo2/v6"
	gjson "github.com/go-json-experiment/json"
	goccy "github.com/goccy/go-json"
	"github.com/gomarkdown/markdown"
	googleschema "github.com/google/jsonschema-go/jsonschema"
	"github.com/gorilla/feeds"
	"github.com/invopop/jsonschema"
	jsoniter "github.com/json-iterator/go"
	kaptinlin "github.com/kaptinlin/jsonschema"
	kgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/mailru/easyjson"
	"github.com/mailru/easyjson/jwriter"
	"github.com/rs/zerolog"
	"github.com/russross/blackfriday/v2"
	santhosh "github.com/santhosh-tekuri/jsonschema/v6"
	segjson "github.com/segmentio/encoding/json"
	"github.com/sirupsen/logrus"
	"github.com/xeipuuv/gojsonschema"
	"github.com/yuin/goldmark"
	"go.uber.org/zap"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	gormsqlite "github.com/glebarez/sqlite"
)

// The waste endpoints: each does per request, with the same result every
// time, work that could be done once. Their path names the rule probe must
// find on them.

func reply(w http.ResponseWriter, ctype string, b []byte) {
	w.Header().Set("Content-Type", ctype)
	w.Write(b)
}

// listing is the data the encoders serialise: the same every time.
func (d *data) listing() []note { return d.notes[:300] }

// easyNote is a note with a hand-written easyjson marshaller, as easyjson's
// generator would write it.
type easyNotes []note

func (ns easyNotes) MarshalEasyJSON(w *jwriter.Writer) {
	w.RawByte('[')
	for i, n := range ns {
		if i > 0 {
			w.RawByte(',')
		}
		w.RawString(`{"id":`)
		w.Int(n.ID)
		w.RawString(`,"title":`)
		w.String(n.Title)
		w.RawString(`,"body":`)
		w.String(n.Body)
		w.RawString(`,"tags":[`)
		for k, t := range n.Tags {
			if k > 0 {
				w.RawByte(',')
			}
			w.String(t)
		}
		w.RawString(`]}`)
	}
	w.RawByte(']')
}

type settingRow struct {
	Key   string `db:"key" gorm:"column:key;primaryKey"`
	Value string `db:"value" gorm:"column:value"`
}

func (settingRow) TableName() string { return "settings" }

// settingsPage reads the settings with database/sql (twice, as the field
// report's server did) and renders them.
func (d *data) settingsPage() ([]byte, error) {
	var b bytes.Buffer
	for range 2 {
		rows, err := d.db.Query(`SELECT key, value FROM settings ORDER BY key`)
		if err != nil {
			return nil, err
		}
		b.Reset()
		for rows.Next() {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				rows.Close()
				return nil, err
			}
			fmt.Fprintf(&b, "<li>%s: %s</li>", k, v)
		}
		rows.Close()
	}
	return b.Bytes(), nil
}

func (d *data) waste() map[string]http.HandlerFunc {
	page := []byte(strings.Repeat("<p>The same page every time, compressed on every request.</p>\n", 800))
	gz := func(level int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			zw, _ := stdgzip.NewWriterLevel(w, level)
			zw.Write(page)
			zw.Close()
		}
	}
	gorm, _ := gorm.Open(gormsqlite.Open(d.dbPath), &gorm.Config{Logger: logger.Discard})
	zlog := zap.NewExample()
	zero := zerolog.New(os.Stderr)
	lr := logrus.New()
	lr.SetOutput(os.Stderr)
	sl := slog.New(slog.NewTextHandler(os.Stderr, nil))
	return map[string]http.HandlerFunc{
		// compression
		"/waste/gzip": gz(stdgzip.DefaultCompression),
		"/waste/klauspost-gzip": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			zw := kgzip.NewWriter(w)
			zw.Write(page)
			zw.Close()
		},
		"/waste/brotli": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "br")
			bw := brotli.NewWriterLevel(w, brotli.DefaultCompression)
			bw.Write(page)
			bw.Close()
		},
		"/waste/zstd": func(w http.ResponseWriter, r *http.Request) {
			enc, _ := zstd.NewWriter(nil)
			w.Header().Set("Content-Encoding", "zstd")
			w.Write(enc.EncodeAll(page, nil))
			enc.Close()
		},
		// JSON encoding of unchanging data
		"/waste/json/std": func(w http.ResponseWriter, r *http.Request) {
			b, _ := json.Marshal(d.listing())
			reply(w, "application/json", b)
		},
		"/waste/json/goccy": func(w http.ResponseWriter, r *http.Request) {
			b, _ := goccy.Marshal(d.listing())
			reply(w, "application/json", b)
		},
		"/waste/json/jsoniter": func(w http.ResponseWriter, r *http.Request) {
			b, _ := jsoniter.ConfigCompatibleWithStandardLibrary.Marshal(d.listing())
			reply(w, "application/json", b)
		},
		"/waste/json/segmentio": func(w http.ResponseWriter, r *http.Request) {
			b, _ := segjson.Marshal(d.listing())
			reply(w, "application/json", b)
		},
		"/waste/json/sonic": func(w http.ResponseWriter, r *http.Request) {
			b, _ := sonic.Marshal(d.listing())
			reply(w, "application/json", b)
		},
		"/waste/json/v2": func(w http.ResponseWriter, r *http.Request) {
			b, _ := gjson.Marshal(d.listing())
			reply(w, "application/json", b)
		},
		"/waste/json/easyjson": func(w http.ResponseWriter, r *http.Request) {
			b, _ := easyjson.Marshal(easyNotes(d.listing()))
			reply(w, "application/json", b)
		},
		// JSON decoding of unchanging configuration, on a GET
		"/waste/config/std":       d.decodeConfig(func(b []byte, v any) error { return json.Unmarshal(b, v) }),
		"/waste/config/goccy":     d.decodeConfig(goccy.Unmarshal),
		"/waste/config/jsoniter":  d.decodeConfig(jsoniter.ConfigCompatibleWithStandardLibrary.Unmarshal),
		"/waste/config/segmentio": d.decodeConfig(segjson.Unmarshal),
		"/waste/config/sonic":     d.decodeConfig(sonic.Unmarshal),
		"/waste/config/v2":        d.decodeConfig(func(b []byte, v any) error { return gjson.Unmarshal(b, v) }),
		// schemas built per request
		"/waste/schema/invopop": func(w http.ResponseWriter, r *http.Request) {
			s := jsonschema.Reflect(&note{})
			reply(w, "text/plain", []byte(s.Title+" ok"))
		},
		"/waste/schema/santhosh": func(w http.ResponseWriter, r *http.Request) {
			doc, _ := santhosh.UnmarshalJSON(strings.NewReader(d.schema))
			c := santhosh.NewCompiler()
			c.AddResource("schema.json", doc)
			_, err := c.Compile("schema.json")
			reply(w, "text/plain", []byte(fmt.Sprint("compiled ", err == nil)))
		},
		"/waste/schema/gojsonschema": func(w http.ResponseWriter, r *http.Request) {
			_, err := gojsonschema.NewSchema(gojsonschema.NewStringLoader(d.schema))
			reply(w, "text/plain", []byte(fmt.Sprint("compiled ", err == nil)))
		},
		"/waste/schema/google": func(w http.ResponseWriter, r *http.Request) {
			var s googleschema.Schema
			err := json.Unmarshal([]byte(d.schema), &s)
			if err == nil {
				_, err = s.Resolve(nil)
			}
			reply(w, "text/plain", []byte(fmt.Sprint("resolved ", err == nil)))
		},
		"/waste/schema/kaptinlin": func(w http.ResponseWriter, r *http.Request) {
			_, err := kaptinlin.NewCompiler().Compile([]byte(d.schema))
			reply(w, "text/plain", []byte(fmt.Sprint("compiled ", err == nil)))
		},
		// templates parsed per request
		"/waste/tmpl/html": func(w http.ResponseWriter, r *http.Request) {
			t := template.Must(template.New("p").Parse(pageTemplate))
			var b bytes.Buffer
			t.Execute(&b, d.listing()[:20])
			reply(w, "text/html", b.Bytes())
		},
		"/waste/tmpl/jet": func(w http.ResponseWriter, r *http.Request) {
			set := jet.NewSet(jet.NewInMemLoader())
			t, err := set.Parse("page.jet", jetTemplate)
			var b bytes.Buffer
			if err == nil {
				t.Execute(&b, nil, d.listing()[:20])
			}
			reply(w, "text/html", b.Bytes())
		},
		"/waste/tmpl/pongo2": func(w http.ResponseWriter, r *http.Request) {
			t, err := pongo2.FromString(pongoTemplate)
			var out string
			if err == nil {
				out, _ = t.Execute(pongo2.Context{"notes": d.listing()[:20]})
			}
			reply(w, "text/html", []byte(out))
		},
		// Markdown rendered per request
		"/waste/md/goldmark": func(w http.ResponseWriter, r *http.Request) {
			var b bytes.Buffer
			goldmark.Convert(d.markdown, &b)
			reply(w, "text/html", b.Bytes())
		},
		"/waste/md/blackfriday": func(w http.ResponseWriter, r *http.Request) { reply(w, "text/html", blackfriday.Run(d.markdown)) },
		"/waste/md/gomarkdown": func(w http.ResponseWriter, r *http.Request) {
			reply(w, "text/html", markdown.ToHTML(d.markdown, nil, nil))
		},
		// XML and feeds built per request
		"/waste/xml": func(w http.ResponseWriter, r *http.Request) {
			b, _ := xml.Marshal(struct {
				XMLName xml.Name `xml:"notes"`
				Notes   []note   `xml:"note"`
			}{Notes: d.listing()})
			reply(w, "application/xml", b)
		},
		"/waste/feeds": func(w http.ResponseWriter, r *http.Request) {
			f := &feeds.Feed{Title: "Zoo", Link: &feeds.Link{Href: "https://zoo.example"}, Created: d.notes[0].Date}
			for _, n := range d.listing()[:200] {
				f.Items = append(f.Items, &feeds.Item{Title: n.Title, Link: &feeds.Link{Href: fmt.Sprintf("https://zoo.example/n/%d", n.ID)}, Description: n.Body, Created: n.Date})
			}
			s, _ := f.ToRss()
			reply(w, "application/rss+xml", []byte(s))
		},
		// the same rows read from the database per request
		"/waste/sql/std": func(w http.ResponseWriter, r *http.Request) {
			b, _ := d.settingsPage()
			reply(w, "text/html", b)
		},
		"/waste/sql/sqlx": func(w http.ResponseWriter, r *http.Request) {
			var rows []settingRow
			d.dbx.Select(&rows, `SELECT key, value FROM settings ORDER BY key`)
			reply(w, "text/plain", []byte(fmt.Sprint(len(rows), rows[0].Value)))
		},
		"/waste/sql/gorm": func(w http.ResponseWriter, r *http.Request) {
			var rows []settingRow
			gorm.Order("key").Find(&rows)
			reply(w, "text/plain", []byte(fmt.Sprint(len(rows))))
		},
		// regular expressions compiled per request
		"/waste/regexp/std": func(w http.ResponseWriter, r *http.Request) {
			n := 0
			for _, nt := range d.notes[:50] {
				if ok, _ := regexp.MatchString(`(?i)^note [0-9]+ about (alpha|sourdough|gzip)$`, nt.Title); ok {
					n++
				}
			}
			reply(w, "text/plain", []byte(fmt.Sprint(n)))
		},
		"/waste/regexp/regexp2": func(w http.ResponseWriter, r *http.Request) {
			re := regexp2.MustCompile(`(?i)^note (?<n>[0-9]+) about (alpha|sourdough|gzip)$`, 0)
			ok, _ := re.MatchString(d.notes[1].Title)
			reply(w, "text/plain", []byte(fmt.Sprint(ok)))
		},
		// logging on every request
		"/waste/log/std": func(w http.ResponseWriter, r *http.Request) {
			log.Printf("warning: layout %q not found, using default", "podcast")
			reply(w, "text/plain", []byte("ok"))
		},
		"/waste/log/slog": func(w http.ResponseWriter, r *http.Request) {
			sl.Warn("layout not found", "layout", "podcast")
			reply(w, "text/plain", []byte("ok"))
		},
		"/waste/log/zap": func(w http.ResponseWriter, r *http.Request) {
			zlog.Warn("layout not found", zap.String("layout", "podcast"))
			reply(w, "text/plain", []byte("ok"))
		},
		"/waste/log/zerolog": func(w http.ResponseWriter, r *http.Request) {
			zero.Warn().Str("layout", "podcast").Msg("layout not found")
			reply(w, "text/plain", []byte("ok"))
		},
		"/waste/log/logrus": func(w http.ResponseWriter, r *http.Request) {
			lr.WithField("layout", "podcast").Warn("layout not found")
			reply(w, "text/plain", []byte("ok"))
		},
		// search that loads every hit's document again to highlight it
		"/waste/search/bleve": func(w http.ResponseWriter, r *http.Request) {
			req := bleve.NewSearchRequest(bleve.NewMatchQuery("sourdough gzip"))
			req.Highlight = bleve.NewHighlight()
			req.Fields = []string{"*"}
			req.Size = 20
			res, err := d.index.Search(req)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			reply(w, "text/plain", []byte(fmt.Sprint(res.Total, len(res.Hits))))
		},
		// a sort by reflection on a field name, per request, of data that did not change
		"/waste/sort/reflect": func(w http.ResponseWriter, r *http.Request) {
			ns := append([]note(nil), d.notes...)
			field := "Title"
			sort.Slice(ns, func(i, j int) bool {
				return reflect.ValueOf(ns[i]).FieldByName(field).String() < reflect.ValueOf(ns[j]).FieldByName(field).String()
			})
			reply(w, "text/plain", []byte(ns[0].Title+" "+ns[len(ns)-1].Title))
		},
		// a walk over every note to find the tags, per request
		"/waste/scan": func(w http.ResponseWriter, r *http.Request) {
			reply(w, "text/plain", []byte(strings.Join(d.tagCloud(), " ")))
		},
		// a feed built by hand, byte-identical every time
		"/waste/feed/handbuilt": func(w http.ResponseWriter, r *http.Request) {
			reply(w, "application/rss+xml", d.handBuiltFeed())
		},
		// invariant work around a per-request nonce, and around a shuffled sidebar
		"/waste/nonce": func(w http.ResponseWriter, r *http.Request) {
			b, _ := d.settingsPage()
			reply(w, "text/html", []byte(fmt.Sprintf(`<html><head><meta name="csrf" content="%016x"></head><body><ul>%s</ul></body></html>`, nonce(), b)))
		},
		"/waste/shuffle": func(w http.ResponseWriter, r *http.Request) {
			var b bytes.Buffer
			goldmark.Convert(d.markdown, &b)
			reply(w, "text/html", []byte("<html><body><nav>"+shuffledSidebar()+"</nav><main>"+b.String()+"</main></body></html>"))
		},
		// allocations with no CPU of their own in a later run: see /clean/cheap
		"/waste/allocate-xml": func(w http.ResponseWriter, r *http.Request) {
			b, _ := xml.Marshal(d.listing())
			reply(w, "application/xml", b[:64])
		},
	}
}

// decodeConfig decodes the configuration on every request of a GET.
func (d *data) decodeConfig(unmarshal func([]byte, any) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var total int
		for range 40 {
			var cfg map[string]any
			if err := unmarshal(d.config, &cfg); err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			total += len(cfg)
		}
		reply(w, "text/plain", []byte(fmt.Sprint("sections ", total)))
	}
}

// tagCloud walks every note to count its tags.
func (d *data) tagCloud() []string {
	counts := map[string]int{}
	for _, n := range d.notes {
		for _, t := range n.Tags {
			counts[t]++
		}
		for _, w := range strings.Fields(n.Title) {
			if strings.HasPrefix(w, "s") {
				counts["s-words"]++
			}
		}
	}
	var out []string
	for t, c := range counts {
		out = append(out, fmt.Sprintf("%s:%d", t, c))
	}
	sort.Strings(out)
	return out
}

// handBuiltFeed writes RSS by hand: string building and escaping.
func (d *data) handBuiltFeed() []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>Zoo</title>`)
	for _, n := range d.listing() {
		b.WriteString("<item><title>")
		b.WriteString(escapeXML(n.Title))
		b.WriteString("</title><description>")
		b.WriteString(escapeXML(n.Body))
		b.WriteString("</description><pubDate>")
		b.WriteString(n.Date.Format("Mon, 02 Jan 2006 15:04:05 -0700"))
		b.WriteString("</pubDate></item>")
	}
	b.WriteString("</channel></rss>")
	return []byte(b.String())
}

func escapeXML(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

const pageTemplate = `<html><body>{{range .}}<article><h2>{{.Title}}</h2><p>{{.Body}}</p>{{range .Tags}}<span>{{.}}</span>{{end}}</article>{{end}}</body></html>`

const jetTemplate = `<html><body>{{range _, n := .}}<article><h2>{{n.Title}}</h2><p>{{n.Body}}</p>{{range _, t := n.Tags}}<span>{{t}}</span>{{end}}</article>{{end}}</body></html>`

const pongoTemplate = `<html><body>{% for n in notes %}<article><h2>{{ n.Title }}</h2><p>{{ n.Body }}</p>{% for t in n.Tags %}<span>{{ t }}</span>{% endfor %}</article>{% endfor %}</body></html>`
