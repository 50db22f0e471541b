package serve

// Agent is one agent as GET /v1/agents lists it: its name, its
// description, and how many tools its toolset offers now (a tool of a
// server that is down is not counted until it is back). The shapes of a
// tool and of a result, which the command prints too, are package wire's.
type Agent struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Tools       int    `json:"tools"`
}
