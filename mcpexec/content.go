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

// carried reports whether the text blocks already carry everything the
// structured content holds, so that rendering it would repeat them: a text
// block holds the same JSON value (as servers are asked to send it), or
// every value in the structured content is a string found in the text
// blocks (server-filesystem sends {"content": <the text>}). A number, a
// boolean or a string the text lacks is information of its own, and the
// structured content is rendered.
func carried(content []mcp.Content, v any) bool {
	if sameJSON(content, v) {
		return true
	}
	var texts []string
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
		}
	}
	if len(texts) == 0 {
		return false
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var value any
	if json.Unmarshal(raw, &value) != nil {
		return false
	}
	return stringsIn(value, strings.Join(texts, "\n"))
}

// stringsIn reports whether every leaf of v is a string contained in text.
func stringsIn(v any, text string) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(text, v)
	case map[string]any:
		for _, x := range v {
			if !stringsIn(x, text) {
				return false
			}
		}
		return true
	case []any:
		for _, x := range v {
			if !stringsIn(x, text) {
				return false
			}
		}
		return true
	}
	return false
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
