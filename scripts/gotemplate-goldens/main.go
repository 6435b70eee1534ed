// Command gotemplate-goldens runs every case of the golden corpus through Go's own
// text/template and writes what Go made of it: the output, or the error's text. The product's
// engine (shared/gotemplate) is compared with these goldens by tests/unit/gotemplate; this
// program only produces them (scripts/regenerate-gotemplate-goldens runs it).
//
// Usage: go run . CORPUS.json > GOLDENS.json
//
// The corpus is {"data": {NAME: VALUE}, "cases": [{"name", "template", "data"}]}: a case's
// "data" names one of the data sets (none: nil). A value is JSON, read as Go reads it with two
// additions: an integer is an int (a number with a point or an exponent a float64), and
//
//	{"$struct": "T", "fields": [["A", v], ...]}  a struct with those fields in that order
//	{"$map": {...}, "$elem": "int"|"string"}     a map[string]int or map[string]string
//
// (any other object is a map[string]interface{}, any array a []interface{}). A struct's field
// has the type of its value (string, int, float64, bool, a struct, a typed map,
// []interface{}, map[string]interface{}; interface{} for null). Templates run with
// Option("missingkey=error"), as the product runs them.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"text/template"
	"unicode/utf8"
)

// maxInline is the longest output written as text; a longer one is written as its length
// and SHA-256 (a case that makes a long value, to show what the product refuses).
const maxInline = 4096

type corpus struct {
	Data  map[string]json.RawMessage `json:"data"`
	Cases []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
		Data     string `json:"data"`
	} `json:"cases"`
}

type golden struct {
	Name         string  `json:"name"`
	Output       *string `json:"output,omitempty"`
	OutputLen    int     `json:"output_len,omitempty"`
	OutputSHA256 string  `json:"output_sha256,omitempty"`
	InvalidUTF8  bool    `json:"invalid_utf8,omitempty"`
	Phase        string  `json:"phase,omitempty"` // "parse" or "exec" for an error
	Error        string  `json:"error,omitempty"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run . CORPUS.json > GOLDENS.json")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[1])
	check(err)
	var c corpus
	check(json.Unmarshal(raw, &c))
	data := map[string]any{}
	for name, value := range c.Data {
		data[name] = decode(value)
	}
	out := struct {
		Go    string   `json:"go"`
		Cases []golden `json:"cases"`
	}{Go: runtime.Version()}
	seen := map[string]bool{}
	for _, k := range c.Cases {
		if seen[k.Name] {
			fail("two cases are named %q", k.Name)
		}
		seen[k.Name] = true
		value, ok := data[k.Data]
		if k.Data != "" && !ok {
			fail("case %q: no data set %q", k.Name, k.Data)
		}
		out.Cases = append(out.Cases, run(k.Name, k.Template, value))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	check(enc.Encode(out))
}

func run(name, source string, data any) golden {
	g := golden{Name: name}
	t, err := template.New("t").Option("missingkey=error").Parse(source)
	if err != nil {
		g.Phase, g.Error = "parse", err.Error()
		return g
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		g.Phase, g.Error = "exec", err.Error()
		return g
	}
	text := buf.String()
	g.InvalidUTF8 = !utf8.ValidString(text)
	if len(text) > maxInline {
		sum := sha256.Sum256(buf.Bytes())
		g.OutputLen, g.OutputSHA256 = len(text), hex.EncodeToString(sum[:])
		return g
	}
	g.Output = &text
	return g
}

// decode reads one corpus value (see the package comment).
func decode(raw json.RawMessage) any {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	check(d.Decode(&v))
	return convert(v)
}

func convert(v any) any {
	switch v := v.(type) {
	case json.Number:
		return number(v)
	case []any:
		items := make([]any, len(v))
		for i, item := range v {
			items[i] = convert(item)
		}
		return items
	case map[string]any:
		if _, ok := v["$struct"]; ok {
			return record(v)
		}
		if m, ok := v["$map"]; ok {
			return typedMap(m.(map[string]any), v["$elem"].(string))
		}
		m := make(map[string]any, len(v))
		for k, item := range v {
			m[k] = convert(item)
		}
		return m
	}
	return v
}

func number(n json.Number) any {
	if strings.ContainsAny(string(n), ".eE") {
		f, err := n.Float64()
		check(err)
		return f
	}
	i, err := n.Int64()
	check(err)
	return int(i)
}

func record(v map[string]any) any {
	pairs := v["fields"].([]any)
	fields := make([]reflect.StructField, len(pairs))
	values := make([]reflect.Value, len(pairs))
	for i, p := range pairs {
		pair := p.([]any)
		value := convert(pair[1])
		typ := reflect.TypeOf(&value).Elem() // interface{} for nil
		if value != nil {
			typ = reflect.TypeOf(value)
		}
		fields[i] = reflect.StructField{Name: pair[0].(string), Type: typ}
		values[i] = reflect.ValueOf(&value).Elem()
	}
	s := reflect.New(reflect.StructOf(fields)).Elem()
	for i, value := range values {
		if value.IsNil() {
			continue
		}
		s.Field(i).Set(value.Elem())
	}
	return s.Interface()
}

func typedMap(m map[string]any, elem string) any {
	switch elem {
	case "int":
		out := map[string]int{}
		for k, v := range m {
			out[k] = number(v.(json.Number)).(int)
		}
		return out
	case "string":
		out := map[string]string{}
		for k, v := range m {
			out[k] = v.(string)
		}
		return out
	}
	fail("unknown $elem %q", elem)
	return nil
}

func check(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "gotemplate-goldens: "+format+"\n", args...)
	os.Exit(1)
}
