package openaimodel_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/openaimodel"
)

// A client for an OpenAI-compatible server (here a stand-in for a local
// vLLM or Ollama server), with the model and retries coming from the
// agent's ModelParams, as the Runner sends them.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"llama3.1:8b","choices":[{"index":0,
			"message":{"role":"assistant","content":"Paris."},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":20,"completion_tokens":2,"total_tokens":22}}`)
	}))
	defer srv.Close()

	client, err := openaimodel.New(openaimodel.Options{BaseURL: srv.URL + "/v1/"})
	if err != nil {
		panic(err)
	}
	reply, err := client.Complete(context.Background(), polyloop.ModelRequest{
		Messages: []polyloop.Message{{Role: polyloop.RoleUser, Content: "Capital of France?"}},
		Params:   polyloop.ModelParams{Model: "llama3.1:8b", Retries: 2, RetryBackoffMS: 500},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(reply.Text, reply.Model, reply.Usage.InputTokens, reply.Attempts)
	fmt.Println("cost known:", reply.Usage.CostUSD != nil)
	// Output:
	// Paris. llama3.1:8b 20 1
	// cost known: false
}
