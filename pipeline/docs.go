package pipeline

import (
	"fmt"
	"reflect"
	"strings"
)

// Reference renders the reference of the pipeline file format as
// Markdown, from the declarations of File, CatalogConfig and
// TransformConfig (their doc, for, required and example tags) and Types:
// the generated part of docs/pipelines.md.
func Reference() string {
	var b strings.Builder
	b.WriteString("### Top level\n\n")
	writeFields(&b, reflect.TypeOf(File{}), false)
	b.WriteString("\n### catalog\n\n")
	writeFields(&b, reflect.TypeOf(CatalogConfig{}), false)
	b.WriteString("\n### spark\n\n")
	writeFields(&b, reflect.TypeOf(SparkConfig{}), false)
	b.WriteString("\n### Transform types\n\n")
	b.WriteString("| type | what it does |\n|---|---|\n")
	for _, t := range Types {
		fmt.Fprintf(&b, "| `%s` | %s |\n", t.Name, t.Doc)
	}
	b.WriteString("\n### Fields of a transform\n\n")
	writeFields(&b, reflect.TypeOf(TransformConfig{}), true)
	b.WriteString("\n### Fields by type\n\n")
	b.WriteString("| type | required | optional |\n|---|---|---|\n")
	for _, t := range Types {
		var req, opt []string
		for _, fi := range fieldsOf(reflect.TypeOf(TransformConfig{})) {
			switch {
			case fi.requiredBy(t.Name):
				req = append(req, "`"+fi.name+"`")
			case fi.usedBy(t.Name):
				opt = append(opt, "`"+fi.name+"`")
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", t.Name, strings.Join(req, ", "), strings.Join(opt, ", "))
	}
	return b.String()
}

func writeFields(b *strings.Builder, t reflect.Type, withTypes bool) {
	if withTypes {
		b.WriteString("| field | value | types | required | description | example |\n|---|---|---|---|---|---|\n")
	} else {
		b.WriteString("| field | value | required | description | example |\n|---|---|---|---|---|\n")
	}
	for _, fi := range fieldsOf(t) {
		req := "no"
		switch {
		case len(fi.required) == 1 && fi.required[0] == "*":
			req = "yes"
		case len(fi.required) > 0:
			req = "for " + strings.Join(fi.required, ", ")
		}
		ex := ""
		if fi.example != "" {
			ex = "`" + strings.ReplaceAll(fi.example, "|", `\|`) + "`"
		}
		doc := strings.ReplaceAll(fi.doc, "|", `\|`)
		value := valueKind(fi.typ)
		if withTypes {
			types := "all"
			if fi.forTypes != nil {
				types = strings.Join(fi.forTypes, ", ")
			}
			fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s | %s |\n", fi.name, value, types, req, doc, ex)
		} else {
			fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", fi.name, value, req, doc, ex)
		}
	}
}

// valueKind names the kind of value a field takes, for the reference.
func valueKind(t reflect.Type) string {
	switch {
	case t == reflect.TypeOf(Duration(0)):
		return "duration"
	case t.Kind() == reflect.String:
		return "string"
	case t.Kind() == reflect.Int:
		return "integer"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return "list of names"
	case t.Kind() == reflect.Slice:
		return "list of transforms"
	case t.Kind() == reflect.Map:
		return "mapping of strings"
	}
	return "mapping"
}
