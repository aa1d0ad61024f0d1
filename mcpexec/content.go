package mcpexec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// render turns a tool result into the observation text.
func render(res *mcp.CallToolResult) string {
	parts := make([]string, 0, len(res.Content)+1)
	for _, c := range res.Content {
		parts = append(parts, block(c))
	}
	if res.StructuredContent != nil && !carried(res.Content, res.StructuredContent) {
		parts = append(parts, structured(res.StructuredContent))
	}
	return strings.Join(parts, "\n")
}

// carried reports whether the content blocks already carry everything the
// structured content holds, so that rendering it would repeat them: a text
// block holds the same JSON value (as servers are asked to send it), or
// every value in the structured content is a string found in the text
// blocks or a copy of a content block (server-filesystem sends
// {"content": <the text>}, or {"content": [<the image block>]}). A number, a
// boolean or a string the blocks lack is information of its own, and the
// structured content is rendered.
func carried(content []mcp.Content, v any) bool {
	if sameJSON(content, v) {
		return true
	}
	var texts []string
	var blocks []any
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
		}
		if b, ok := asJSON(c); ok {
			blocks = append(blocks, b)
		}
	}
	value, ok := asJSON(v)
	return ok && in(value, strings.Join(texts, "\n"), blocks)
}

// in reports whether every leaf of v is a string contained in text, or a
// value equal to one of blocks.
func in(v any, text string, blocks []any) bool {
	for _, b := range blocks {
		if reflect.DeepEqual(v, b) {
			return true
		}
	}
	switch v := v.(type) {
	case string:
		return text != "" && strings.Contains(text, v)
	case map[string]any:
		for _, x := range v {
			if !in(x, text, blocks) {
				return false
			}
		}
		return len(v) > 0
	case []any:
		for _, x := range v {
			if !in(x, text, blocks) {
				return false
			}
		}
		return len(v) > 0
	}
	return false
}

// asJSON re-decodes v's JSON encoding into maps, slices and scalars.
func asJSON(v any) (any, bool) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var out any
	if json.Unmarshal(raw, &out) != nil {
		return nil, false
	}
	return out, true
}

// block renders one content block: text as it is, binary data described.
func block(c mcp.Content) string {
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Text
	case *mcp.ImageContent:
		return fmt.Sprintf("[image: %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data))
	case *mcp.AudioContent:
		return fmt.Sprintf("[audio: %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data))
	case *mcp.ResourceLink:
		return resourceLink(c)
	case *mcp.EmbeddedResource:
		return embedded(c.Resource)
	}
	return fmt.Sprintf("[content of type %s]", contentType(c))
}

func resourceLink(c *mcp.ResourceLink) string {
	s := fmt.Sprintf("[resource link: %s <%s>", c.Name, c.URI)
	if c.MIMEType != "" {
		s += ", " + c.MIMEType
	}
	if c.Size != nil {
		s += fmt.Sprintf(", %d bytes", *c.Size)
	}
	return s + "]"
}

func embedded(r *mcp.ResourceContents) string {
	switch {
	case r == nil:
		return "[resource: empty]"
	case r.Blob != nil:
		return fmt.Sprintf("[resource %s: %s, %d bytes]", r.URI, orUnknown(r.MIMEType), len(r.Blob))
	}
	return fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text)
}

// contentType reads the wire type of a content block the executor does not
// know.
func contentType(c mcp.Content) string {
	raw, err := c.MarshalJSON()
	if err != nil {
		return fmt.Sprintf("%T", c)
	}
	var head struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &head) != nil || head.Type == "" {
		return fmt.Sprintf("%T", c)
	}
	return head.Type
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}

// structured renders structured content as JSON.
func structured(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("[structured content that does not encode: %v]", err)
	}
	return string(raw)
}

// sameJSON reports whether the content is a single text block holding the
// structured content's JSON value, as servers are asked to send it.
func sameJSON(content []mcp.Content, v any) bool {
	if len(content) != 1 {
		return false
	}
	text, ok := content[0].(*mcp.TextContent)
	if !ok {
		return false
	}
	var fromText any
	if json.Unmarshal([]byte(text.Text), &fromText) != nil {
		return false
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var fromValue any
	if json.Unmarshal(raw, &fromValue) != nil {
		return false
	}
	return reflect.DeepEqual(fromText, fromValue)
}
