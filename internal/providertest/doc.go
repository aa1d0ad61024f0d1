// Package providertest holds the test scaffolding the model clients
// (openaimodel, anthropicmodel) share: a fake HTTP server that answers from
// fixture files, golden-file helpers, and the tests of behaviour every
// client must have alike — cancellation, connection failures and retries,
// keeping the API key secret, the contract kit and end-to-end runs through
// the Runner. A client's tests describe it with a Harness and call the
// shared tests; what differs between the providers (fixtures, wire
// formats, error bodies) stays in the client's own tests.
package providertest
