package anthropicmodel_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/anthropicmodel"
)

// A failed call is an error carrying the provider's status, type and
// request id; the retries are the request's own explicit ModelParams.
func Example_failure() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("request-id", "req_1")
		w.WriteHeader(529)
		fmt.Fprint(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	}))
	defer srv.Close()

	client, err := anthropicmodel.New(anthropicmodel.Options{BaseURL: srv.URL, APIKey: "example-key"})
	if err != nil {
		panic(err)
	}
	_, err = client.Complete(context.Background(), polyloop.ModelRequest{
		Messages: []polyloop.Message{{Role: polyloop.RoleUser, Content: "Hello"}},
		Params:   polyloop.ModelParams{Model: "claude-sonnet-5-5", Retries: 1, RetryBackoffMS: 1},
	})
	var apiErr *anthropicmodel.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Type, apiErr.RequestID, apiErr.Attempts)
	}
	// Output:
	// 529 overloaded_error req_1 2
}
