package memory

// SetReceivedHook sets the hook told of each run of a proposal's Succeeded
// handler (nil: none).
func SetReceivedHook(f func(childRunID string)) { receivedHook = f }
