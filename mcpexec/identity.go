package mcpexec

import (
	"fmt"
	"net/url"
	"strings"
)

// identity names the server for Describe and for error messages, without
// credentials.
func (o *Options) identity() string {
	switch {
	case o.Identity != "":
		return o.Identity
	case len(o.Command) > 0:
		return "stdio:" + strings.Join(o.Command, " ")
	case o.URL != "":
		return "http:" + redactURL(o.URL)
	}
	return fmt.Sprintf("transport:%T", o.Transport)
}

// redactURL drops user information, query and fragment, which may carry
// tokens.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparseable URL>"
	}
	u.User, u.RawQuery, u.Fragment, u.RawFragment = nil, "", "", ""
	u.ForceQuery = false
	return u.String()
}
