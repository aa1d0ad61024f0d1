package otelsink

import (
	"encoding/json"
	"testing"
)

func TestServerOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		config string
		want   endpoint
	}{
		{`{"base_url":"https://api.openai.com/v1/"}`, endpoint{"api.openai.com", 443}},
		{`{"base_url":"http://localhost:8000/v1/"}`, endpoint{"localhost", 8000}},
		{`{"base_url":"http://[::1]/v1"}`, endpoint{"::1", 80}},
		{`{"base_url":"https://u:hunter22@gw.example/v1?api_key=REDACTED"}`, endpoint{"gw.example", 443}},
		{`{"base_url":"unix:///run/llm.sock"}`, endpoint{}},
		{`{"base_url":"grpc://gw.example/v1"}`, endpoint{"gw.example", 0}}, // no known default port
		{`{"base_url":""}`, endpoint{}},
		{`{"model":"m"}`, endpoint{}},
		{`["not","an","object"]`, endpoint{}},
		{`{"base_url":5}`, endpoint{}},
		{``, endpoint{}},
	}
	for _, tt := range tests {
		if got := serverOf(json.RawMessage(tt.config)); got != tt.want {
			t.Errorf("serverOf(%s) = %+v; want %+v", tt.config, got, tt.want)
		}
	}
}
