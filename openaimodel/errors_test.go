package openaimodel

import (
	"time"

	"github.com/polyloop/polyloop/internal/providertest"
)

// apiErrors are the error statuses the shared tests send, and the errors
// they must give.
var apiErrors = []providertest.APIErrorCase[pkg]{
	{
		Name: "400 is not retried", Retries: 2, Requests: 1,
		Resp: response{Status: 400, Fixture: "error_400.json", Header: map[string]string{"x-request-id": "req_400"}},
		Want: APIError{StatusCode: 400, Type: "invalid_request_error", Param: "messages.[3].role", RequestID: "req_400", Attempts: 1,
			Message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."},
	},
	{
		Name: "401 is not retried", Retries: 2, Requests: 1,
		Resp: response{Status: 401, Fixture: "error_401.json"},
		Want: APIError{StatusCode: 401, Type: "invalid_request_error", Code: "invalid_api_key", Attempts: 1,
			Message: "Incorrect API key provided: [REDACTED]. You can find your API key at https://platform.openai.com/account/api-keys."},
	},
	{
		Name: "500 is retried until the retries run out", Retries: 2, Requests: 3,
		Resp: response{Status: 500, Fixture: "error_500.json"},
		Want: APIError{StatusCode: 500, Type: "server_error", Attempts: 3,
			Message: "The server had an error while processing your request. Sorry about that!"},
	},
	{
		Name: "a body that is not JSON", Retries: 0, Requests: 1,
		Resp: response{Status: 502, Fixture: "error_502.html", Header: map[string]string{"Content-Type": "text/html"}},
		Want: APIError{StatusCode: 502, Attempts: 1,
			Message: "<html>\n<head><title>502 Bad Gateway</title></head>\n<body><center><h1>502 Bad Gateway</h1></center></body>\n</html>"},
	},
	{
		Name: "vLLM's error shape", Retries: 1, Requests: 1,
		Resp: response{Status: 400, Fixture: "error_vllm_400.json"},
		Want: APIError{StatusCode: 400, Type: "BadRequestError", Code: "400", Attempts: 1,
			Message: "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens."},
	},
	{
		Name: "a Retry-After beyond the maximum ends the retries", Retries: 3, Requests: 1,
		Resp: response{Status: 429, Fixture: "error_429.json", Header: map[string]string{"Retry-After": "3600"}},
		Want: APIError{StatusCode: 429, Type: "requests", Code: "rate_limit_exceeded", RetryAfter: time.Hour, Attempts: 1,
			Message: "Rate limit reached for gpt-4o in organization org-xyz on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms."},
	},
}
