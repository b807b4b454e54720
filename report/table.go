package report

import (
	"fmt"
	"html"
	"io"
	"strings"
	"text/tabwriter"
)

// Table is one table of a report, built once and rendered as terminal
// text, Markdown and HTML from the same rows (as benchstat renders one
// table model many ways).
type Table struct {
	Columns []Column
	Rows    [][]string
}

// Column is a column's title and alignment.
type Column struct {
	Title string
	Right bool // numbers align right
}

// AddRow appends a row; cells beyond the columns are dropped.
func (t *Table) AddRow(cells ...string) {
	t.Rows = append(t.Rows, cells[:min(len(cells), len(t.Columns))])
}

// Text writes the table aligned for a terminal.
func (t *Table) Text(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(cells func(i int) string) {
		parts := make([]string, len(t.Columns))
		for i := range t.Columns {
			parts[i] = t.pad(i, cells(i))
		}
		fmt.Fprintln(tw, strings.TrimRight(strings.Join(parts, "\t"), " \t"))
	}
	line(func(i int) string { return t.Columns[i].Title })
	for _, r := range t.Rows {
		line(func(i int) string { return cell(r, i) })
	}
	tw.Flush()
}

// pad right-aligns the cells of numeric columns by hand, as tabwriter
// aligns a whole table one way.
func (t *Table) pad(i int, s string) string {
	if !t.Columns[i].Right {
		return s
	}
	width := len([]rune(t.Columns[i].Title))
	for _, r := range t.Rows {
		width = max(width, len([]rune(cell(r, i))))
	}
	return strings.Repeat(" ", width-len([]rune(s))) + s
}

// Markdown is the table in GitHub's Markdown.
func (t *Table) Markdown() string {
	var b strings.Builder
	b.WriteString("|")
	for _, c := range t.Columns {
		b.WriteString(" " + mdCell(c.Title) + " |")
	}
	b.WriteString("\n|")
	for _, c := range t.Columns {
		if c.Right {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		b.WriteString("|")
		for i := range t.Columns {
			b.WriteString(" " + mdCell(cell(r, i)) + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// HTML is the table as an HTML element; classes, when given, name each
// row's class (e.g. better, worse).
func (t *Table) HTML(classes ...string) string {
	var b strings.Builder
	b.WriteString("<table><tr>")
	for _, c := range t.Columns {
		fmt.Fprintf(&b, "<th>%s</th>", html.EscapeString(c.Title))
	}
	b.WriteString("</tr>")
	for k, r := range t.Rows {
		if k < len(classes) && classes[k] != "" {
			fmt.Fprintf(&b, `<tr class="%s">`, html.EscapeString(classes[k]))
		} else {
			b.WriteString("<tr>")
		}
		for i, c := range t.Columns {
			align := ""
			if c.Right {
				align = ` class="num"`
			}
			fmt.Fprintf(&b, "<td%s>%s</td>", align, html.EscapeString(cell(r, i)))
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</table>")
	return b.String()
}

func cell(r []string, i int) string {
	if i < len(r) {
		return r[i]
	}
	return ""
}

// mdCell keeps a cell in its column: pipes escaped, lines joined.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
