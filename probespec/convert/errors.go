package convert

import (
	"fmt"
	"strings"
)

// Error is one reason a document cannot be converted; it names the
// document, the object and the field.
type Error struct {
	// Doc is the document's number in the input, from 1.
	Doc int
	// Line is the line in the input the problem is at, 0 when unknown.
	Line int
	// Object is "Kind namespace/name" (or "Kind name"), empty when the
	// document could not be read that far.
	Object string
	// Field is the path of the offending field from the document's root,
	// e.g. spec.template.spec.containers[0].livenessProbe; may be empty.
	Field string
	// Detail says what is wrong.
	Detail string
}

var _ error = (*Error)(nil)

// Error renders `document 2 (Deployment shop/web), line 31: FIELD: DETAIL`.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "document %d", e.Doc)
	if e.Object != "" {
		fmt.Fprintf(&b, " (%s)", e.Object)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, ", line %d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Detail)
	return b.String()
}

// ErrorList is every problem of one input.
type ErrorList []*Error

// Error joins the problems, one a line.
func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}
