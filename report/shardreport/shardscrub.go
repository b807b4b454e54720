package shardreport

import (
	"reflect"
	"strings"
	"unicode/utf8"
)

// scrub makes every string of a report read back from a shard's folder
// (v a pointer to it) text of one line: the characters a terminal acts on
// — ESC and the rest of C0, DEL, C1, the Unicode line and paragraph
// separators — removed, a newline or tab made a space, invalid UTF-8
// replaced. A crafted report.json's text then reaches the merged report,
// the terminal and an error line as text only, never a line of its own
// (probe's own reports hold no newline in a string). Map keys are
// scrubbed too (two keys that differ only there become one).
func scrub(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			scrub(v.Elem())
		}
	case reflect.Interface:
		if v.IsNil() || !v.CanSet() {
			return
		}
		c := reflect.New(v.Elem().Type()).Elem()
		c.Set(v.Elem())
		scrub(c)
		v.Set(c)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				scrub(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			scrub(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() || !v.CanSet() {
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			k := reflect.New(v.Type().Key()).Elem()
			k.Set(it.Key())
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			scrub(k)
			scrub(e)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.String:
		if v.CanSet() {
			if s := v.String(); needsScrub(s) {
				v.SetString(scrubbed(s))
			}
		}
	}
}

func acted(r rune) bool {
	return r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == '\u2028' || r == '\u2029'
}

func needsScrub(s string) bool { return !utf8.ValidString(s) || strings.IndexFunc(s, acted) >= 0 }

func scrubbed(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return ' '
		case acted(r):
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}
