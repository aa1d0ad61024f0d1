package anthropicmodel

import (
	"time"

	"github.com/polyloop/polyloop/internal/providertest"
)

// apiErrors are the error statuses the shared tests send, and the errors
// they must give.
var apiErrors = []providertest.APIErrorCase[pkg]{
	{
		Name: "400 is not retried", Retries: 2, Requests: 1,
		Resp: response{Status: 400, Fixture: "error_400.json", Header: map[string]string{"request-id": "req_011CSHoEeqs5C35K2UUqR7Fy"}},
		Want: APIError{StatusCode: 400, Type: "invalid_request_error", RequestID: "req_011CSHoEeqs5C35K2UUqR7Fy", Attempts: 1,
			Message: "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
	},
	{
		Name: "an error code in the details", Retries: 0, Requests: 1,
		Resp: response{Status: 400, Fixture: "error_400_code.json"},
		Want: APIError{StatusCode: 400, Type: "invalid_request_error", Code: "available_tools_limit_exceeded",
			RequestID: "req_011CSHoEeqs5C35K2UUqR7G3", Attempts: 1,
			Message: "The tools available after this message exceed the limit."},
	},
	{
		Name: "401 is not retried", Retries: 2, Requests: 1,
		Resp: response{Status: 401, Fixture: "error_401.json"},
		Want: APIError{StatusCode: 401, Type: "authentication_error", RequestID: "req_011CSHoEeqs5C35K2UUqR7Fz", Attempts: 1,
			Message: "invalid x-api-key: [REDACTED]"},
	},
	{
		Name: "500 is retried until the retries run out", Retries: 2, Requests: 3,
		Resp: response{Status: 500, Fixture: "error_500.json"},
		Want: APIError{StatusCode: 500, Type: "api_error", RequestID: "req_011CSHoEeqs5C35K2UUqR7G1", Attempts: 3,
			Message: "Internal server error"},
	},
	{
		Name: "529 overloaded is retried", Retries: 1, Requests: 2,
		Resp: response{Status: 529, Fixture: "error_529.json"},
		Want: APIError{StatusCode: 529, Type: "overloaded_error", RequestID: "req_011CSHoEeqs5C35K2UUqR7G2", Attempts: 2,
			Message: "Overloaded"},
	},
	{
		Name: "a body that is not JSON", Retries: 0, Requests: 1,
		Resp: response{Status: 502, Fixture: "error_502.html", Header: map[string]string{"Content-Type": "text/html"}},
		Want: APIError{StatusCode: 502, Attempts: 1,
			Message: "<html>\n<head><title>502 Bad Gateway</title></head>\n<body><center><h1>502 Bad Gateway</h1></center></body>\n</html>"},
	},
	{
		Name: "a Retry-After beyond the maximum ends the retries", Retries: 3, Requests: 1,
		Resp: response{Status: 429, Fixture: "error_429.json", Header: map[string]string{"Retry-After": "3600"}},
		Want: APIError{StatusCode: 429, Type: "rate_limit_error", RequestID: "req_011CSHoEeqs5C35K2UUqR7G0", RetryAfter: time.Hour, Attempts: 1,
			Message: "This request would exceed the rate limit for your organization of 50 requests per minute."},
	},
}
