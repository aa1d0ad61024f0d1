package memory

// SetReceivedHook sets the hook told of each run of a proposal's Succeeded
// handler (nil: none).
func SetReceivedHook(f func(childRunID string)) { receivedHook = f }

// ParseProposal reads a proposer's answer as the maintenance does, for a
// proposer shown nothing.
func ParseProposal(answer string, namespaces []string) (Proposal, error) {
	return parseProposal(answer, namespaces, proposalInput{})
}
