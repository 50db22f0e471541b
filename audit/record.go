package audit

import (
	"time"

	"github.com/heddlehq/heddle/runtime"
)

// OCSF identifiers of the API Activity class, as written in every record.
const (
	ClassUID    = 6003 // API Activity
	CategoryUID = 6    // Application Activity
	// ActivityOther is the activity of a tool call: OCSF's API Activity
	// knows Create, Read, Update and Delete, and a tool is none of these
	// that heddle can tell.
	ActivityOther = 99
	// OCSFVersion is the version of the schema records follow.
	OCSFVersion = "1.3.0"
)

// Record is one line of the audit file. Its JSON is OCSF API Activity's,
// heddle's own fields under unmapped, and the chain under chain.
type Record struct {
	ActivityID   int      `json:"activity_id"`
	ActivityName string   `json:"activity_name"`
	CategoryUID  int      `json:"category_uid"`
	ClassUID     int      `json:"class_uid"`
	TypeUID      int      `json:"type_uid"`
	SeverityID   int      `json:"severity_id"`
	Time         int64    `json:"time"`     // the call's start, in ms since the epoch
	Duration     int64    `json:"duration"` // in ms
	Actor        Actor    `json:"actor"`
	API          API      `json:"api"`
	Status       string   `json:"status"`    // Success or Failure
	StatusID     int      `json:"status_id"` // 1 Success, 2 Failure
	StatusCode   string   `json:"status_code,omitempty"`
	Metadata     Metadata `json:"metadata"`
	Unmapped     Unmapped `json:"unmapped"`
	Chain        Chain    `json:"chain"`
}

// Actor is OCSF's actor: the caller.
type Actor struct {
	User User `json:"user"`
}

// User is the caller's subject (uid) and roles (groups).
type User struct {
	UID    string  `json:"uid,omitempty"`
	Groups []Group `json:"groups,omitempty"`
}

// Group is one role of the caller.
type Group struct {
	Name string `json:"name"`
}

// API is the operation called: the tool, and its server (or its kind, for a
// tool that has no server).
type API struct {
	Operation string  `json:"operation"`
	Service   Service `json:"service"`
}

// Service names the server.
type Service struct {
	Name string `json:"name,omitempty"`
}

// Metadata says which product wrote the record, and which OCSF version it
// follows.
type Metadata struct {
	Version string  `json:"version"`
	Product Product `json:"product"`
}

// Product is heddle.
type Product struct {
	Name       string `json:"name"`
	VendorName string `json:"vendor_name"`
	Version    string `json:"version,omitempty"`
}

// Unmapped holds heddle's own fields.
type Unmapped struct {
	Agent  string `json:"agent"`
	Tool   string `json:"tool"`
	Kind   string `json:"kind,omitempty"`
	Server string `json:"server,omitempty"`
	// Decision is the policy's: allow, deny or ask; empty when the call
	// never reached the policy (an unknown tool).
	Decision string `json:"decision,omitempty"`
	// Rule is what made the decision: policies.rules[i], denied_tools,
	// approval, or default.
	Rule string `json:"rule,omitempty"`
	// Approval is asked (no approver), approved or declined; empty when
	// the decision was not ask.
	Approval string `json:"approval,omitempty"`
	// Outcome is ok, tool_error (the tool's own failure) or refused (a
	// refusal the model reads, or a failure: Code says which).
	Outcome string `json:"outcome"`
	Code    string `json:"code,omitempty"`
	Limit   string `json:"limit,omitempty"`
	TraceID string `json:"trace_id,omitempty"`
	// ArgsSHA256 is the hex SHA-256 of the arguments' canonical JSON.
	ArgsSHA256 string `json:"args_sha256,omitempty"`
	// Lost counts the records before this one that could not be written
	// (a full queue, a failed write): the chain stays whole, and the gap
	// is said.
	Lost uint64 `json:"lost,omitempty"`
}

// Chain links a record to the one before it.
type Chain struct {
	Seq  uint64 `json:"seq"`
	Prev string `json:"prev"`
	MAC  string `json:"mac,omitempty"`
}

// FromCall is the record of a call that has just finished, its chain not
// yet set.
func FromCall(ev runtime.CallEvent, version string) Record {
	return fromCall(ev, version, time.Now())
}

func fromCall(ev runtime.CallEvent, version string, now time.Time) Record {
	r := Record{
		ActivityID: ActivityOther, ActivityName: "Other",
		CategoryUID: CategoryUID, ClassUID: ClassUID, TypeUID: ClassUID*100 + ActivityOther,
		SeverityID: 1,
		Time:       now.Add(-ev.Duration).UnixMilli(),
		Duration:   ev.Duration.Milliseconds(),
		API:        API{Operation: ev.Tool, Service: Service{Name: ev.Server}},
		Metadata:   Metadata{Version: OCSFVersion, Product: Product{Name: "heddle", VendorName: "heddle", Version: version}},
		Unmapped: Unmapped{Agent: ev.Agent, Tool: ev.Tool, Kind: ev.Kind, Server: ev.Server,
			Decision: ev.Decision, Rule: ev.Rule, Approval: ev.Approval,
			Code: string(ev.Code), Limit: ev.Limit, TraceID: ev.TraceID, ArgsSHA256: ev.ArgsSHA256},
	}
	if r.API.Service.Name == "" {
		r.API.Service.Name = ev.Kind
	}
	r.Actor.User.UID = ev.Caller.Subject
	for _, role := range ev.Caller.Roles {
		r.Actor.User.Groups = append(r.Actor.User.Groups, Group{Name: role})
	}
	switch {
	case ev.Code == "" && !ev.ToolError:
		r.Unmapped.Outcome = "ok"
	case ev.ToolError:
		r.Unmapped.Outcome = "tool_error"
	default:
		r.Unmapped.Outcome = "refused"
	}
	r.Status, r.StatusID, r.StatusCode = "Success", 1, "ok"
	if r.Unmapped.Outcome != "ok" {
		r.Status, r.StatusID, r.StatusCode = "Failure", 2, string(ev.Code)
		if ev.ToolError {
			r.StatusCode = "tool_error"
		}
	}
	return r
}
