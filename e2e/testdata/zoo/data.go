package main

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	_ "github.com/glebarez/go-sqlite" // registers "sqlite"
	"github.com/jmoiron/sqlx"
)

// note is one record of the zoo's data.
type note struct {
	ID    int       `json:"id" xml:"id"`
	Title string    `json:"title" xml:"title"`
	Tags  []string  `json:"tags" xml:"tags>tag"`
	Date  time.Time `json:"date" xml:"date"`
	Body  string    `json:"body" xml:"body"`
	Month string    `json:"month" xml:"month"`
	Words int       `json:"words" xml:"words"`
}

// data is what the endpoints read: notes, a settings database, a search
// index, and what the clean endpoints prepared at start.
type data struct {
	notes    []note
	byTag    map[string][]int
	db       *sql.DB
	dbx      *sqlx.DB
	dbPath   string
	index    bleve.Index
	markdown []byte
	config   []byte // a JSON configuration the waste endpoints decode per request
	schema   string // a JSON schema the waste endpoints compile per request
	page     []byte // a page built at start (the clean static endpoints)
	pageGz   []byte
	pageJSON []byte
}

var words = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar
papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu sourdough gzip latency profile schema template
markdown feed sitemap index search query cache render notes vault server handler request reply load time`)

var tags = []string{"go", "travel", "food", "music", "books", "code", "ops", "notes"}

func newData() (*data, error) {
	r := rand.New(rand.NewPCG(1, 2))
	d := &data{byTag: map[string][]int{}}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1500 {
		var b strings.Builder
		n := 60 + r.IntN(120)
		for range n {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		nt := note{ID: i, Title: fmt.Sprintf("Note %d about %s", i, words[r.IntN(len(words))]), Body: b.String(), Words: n,
			Tags: []string{tags[r.IntN(len(tags))], tags[r.IntN(len(tags))]}, Date: start.Add(time.Duration(r.IntN(600)) * 24 * time.Hour)}
		nt.Month = nt.Date.Format("2006-01")
		d.notes = append(d.notes, nt)
		for _, t := range nt.Tags {
			d.byTag[t] = append(d.byTag[t], i)
		}
	}
	var md strings.Builder
	for i := range 40 {
		fmt.Fprintf(&md, "## Section %d\n\nSome *emphasis* and **strong** text with a [link](https://example.com/%d) and `code`.\n\n- one\n- two\n- three\n\n| a | b |\n|---|---|\n| %d | %d |\n\n", i, i, i, i*i)
	}
	d.markdown = []byte(md.String())
	d.config = []byte(configJSON)
	d.schema = schemaJSON
	if err := d.openDB(); err != nil {
		return nil, err
	}
	if err := d.openIndex(); err != nil {
		return nil, err
	}
	d.prepareClean()
	return d, nil
}

func (d *data) openDB() error {
	dir, err := os.MkdirTemp("", "zoo-db-")
	if err != nil {
		return err
	}
	d.dbPath = filepath.Join(dir, "settings.db")
	if d.db, err = sql.Open("sqlite", d.dbPath); err != nil {
		return err
	}
	d.dbx = sqlx.NewDb(d.db, "sqlite")
	stmts := []string{`CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT)`}
	for i := range 40 {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO settings VALUES ('key%02d', 'value of setting %d, long enough to read')`, i, i))
	}
	for _, s := range stmts {
		if _, err := d.db.Exec(s); err != nil {
			return err
		}
	}
	return nil
}

func (d *data) openIndex() error {
	idx, err := bleve.NewMemOnly(bleve.NewIndexMapping())
	if err != nil {
		return err
	}
	batch := idx.NewBatch()
	for _, n := range d.notes[:600] {
		if err := batch.Index(fmt.Sprint(n.ID), map[string]any{"title": n.Title, "body": n.Body}); err != nil {
			return err
		}
	}
	d.index = idx
	return idx.Batch(batch)
}

const configJSON = `{"site": {"title": "Zoo", "base_url": "https://zoo.example", "languages": ["en", "de", "ru"],
 "features": {"search": true, "feeds": true, "comments": false, "mcp": true},
 "limits": {"page_size": 20, "max_query": 1000, "timeout_ms": 2500},
 "menu": [{"title": "Home", "href": "/"}, {"title": "Notes", "href": "/notes"}, {"title": "Tags", "href": "/tags"},
          {"title": "About", "href": "/about"}, {"title": "Feed", "href": "/feed.xml"}],
 "authors": [{"name": "Ann", "email": "ann@zoo.example"}, {"name": "Bo", "email": "bo@zoo.example"}]}}`

const schemaJSON = `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
 "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 1000},
   "params": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
   "page": {"type": "integer", "minimum": 1, "maximum": 1000},
   "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "maxItems": 20},
   "sort": {"enum": ["date", "title", "words"]},
   "range": {"type": "object", "properties": {"from": {"type": "string", "format": "date"}, "to": {"type": "string", "format": "date"}}}},
 "required": ["query"], "additionalProperties": false}`
