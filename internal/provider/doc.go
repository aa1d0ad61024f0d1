// Package provider holds what the model clients (openaimodel,
// anthropicmodel) have in common and that does not depend on a provider's
// wire format or SDK: the error types and their classification from what an
// attempt saw on the wire, the explicit retry policy and loop (for Complete
// and for streamed calls, whose retried attempts are superseded and whose
// failed attempts' usage is kept), the settings
// every client has and how Describe reports them, and the pairing of tool
// calls with their results in the history.
//
// A client keeps its own request and reply conversion, its error body
// parsing and its SDK calls. It instantiates the error types with a type of
// its own (see Package), so that each client's errors are distinct types
// whose texts start with the client's package name, and exports them as
// aliases (type APIError = provider.APIError[pkg]).
package provider
