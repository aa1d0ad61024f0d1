package agentfile

// MemorySpec configures what the agent remembers (package memory), kept in
// the run store beside the runs:
//
//	memory:
//	  namespaces: [notes]          # default: [<name>]
//	  tools: true                  # remember, recall, forget
//	  view:                        # the entries the model is shown, after the system prompt
//	    name: notes                # default: <name>
//	    sources: [notes]           # default: every namespace
//	    template: "..."            # text/template over the view; default polyloop.DefaultViewTemplate
//	  maintain:                    # after each step: propose, write, adjust the view
//	    system: "..."              # the proposer's prompt; default memory.DefaultProposerSystem
//	    max_steps: 1               # the proposer's steps (default 1)
//	    script: [{text: '{"memory": []}'}]   # a scripted proposer (default: the agent's model)
//	    on_proposal_failure: skip  # skip | fail (default fail: the run stops)
//	    on_conflict: regenerate    # skip | fail | regenerate
//	    max_proposals: 2           # regenerate's attempts
//	    on_view_rejected: skip     # skip | fail
//	    max_entries: 100           # what the proposer is shown
type MemorySpec struct {
	Namespaces []string      `yaml:"namespaces"`
	Tools      bool          `yaml:"tools"`
	View       *ViewSpec     `yaml:"view"`
	Maintain   *MaintainSpec `yaml:"maintain"`
}

// ViewSpec configures the view the model is shown.
type ViewSpec struct {
	Name     string   `yaml:"name"`
	Sources  []string `yaml:"sources"`
	Template string   `yaml:"template"`
}

// MaintainSpec configures the maintenance after each step (memory.Maintainer).
type MaintainSpec struct {
	System            string     `yaml:"system"`
	MaxSteps          int        `yaml:"max_steps"`
	Script            []TurnSpec `yaml:"script"`
	OnProposalFailure string     `yaml:"on_proposal_failure"`
	OnConflict        string     `yaml:"on_conflict"`
	MaxProposals      int        `yaml:"max_proposals"`
	OnViewRejected    string     `yaml:"on_view_rejected"`
	MaxEntries        int        `yaml:"max_entries"`
}

// namespaces are the namespaces served: as given, or the agent's name.
func (m *MemorySpec) namespaces(agent string) []string {
	if len(m.Namespaces) > 0 {
		return m.Namespaces
	}
	return []string{agent}
}
