package musterevents

import (
	"fmt"
	"strings"
	"time"
)

// Reason is one of muster's event reasons (muster's internal/events).
type Reason string

// muster's reasons that musterd emits. muster's token forwarding and
// exchange, recovery and capabilities reasons have no musterd counterpart.
const (
	MCPServerCreated           Reason = "MCPServerCreated"
	MCPServerUpdated           Reason = "MCPServerUpdated"
	MCPServerDeleted           Reason = "MCPServerDeleted"
	MCPServerStarting          Reason = "MCPServerStarting"
	MCPServerStarted           Reason = "MCPServerStarted"
	MCPServerStopped           Reason = "MCPServerStopped"
	MCPServerRestarting        Reason = "MCPServerRestarting"
	MCPServerFailed            Reason = "MCPServerFailed"
	MCPServerToolsDiscovered   Reason = "MCPServerToolsDiscovered"
	MCPServerToolsUnavailable  Reason = "MCPServerToolsUnavailable"
	MCPServerHealthCheckFailed Reason = "MCPServerHealthCheckFailed"
	MCPServerAuthRequired      Reason = "MCPServerAuthRequired"

	WorkflowCreated             Reason = "WorkflowCreated"
	WorkflowUpdated             Reason = "WorkflowUpdated"
	WorkflowDeleted             Reason = "WorkflowDeleted"
	WorkflowValidationFailed    Reason = "WorkflowValidationFailed"
	WorkflowValidationSucceeded Reason = "WorkflowValidationSucceeded"
	WorkflowExecutionStarted    Reason = "WorkflowExecutionStarted"
	WorkflowExecutionCompleted  Reason = "WorkflowExecutionCompleted"
	WorkflowExecutionFailed     Reason = "WorkflowExecutionFailed"
	WorkflowExecutionTracked    Reason = "WorkflowExecutionTracked"

	WorkflowStepStarted            Reason = "WorkflowStepStarted"
	WorkflowStepCompleted          Reason = "WorkflowStepCompleted"
	WorkflowStepFailed             Reason = "WorkflowStepFailed"
	WorkflowStepSkipped            Reason = "WorkflowStepSkipped"
	WorkflowStepConditionEvaluated Reason = "WorkflowStepConditionEvaluated"
)

// Severities, as Kubernetes Events have them.
const (
	Normal  = "Normal"
	Warning = "Warning"
)

// Severity is muster's severity of a reason: Warning for failures,
// Normal for the rest.
func Severity(r Reason) string {
	switch r {
	case MCPServerFailed, MCPServerToolsUnavailable, MCPServerHealthCheckFailed,
		WorkflowExecutionFailed, WorkflowValidationFailed, WorkflowStepFailed:
		return Warning
	}
	return Normal
}

// Data is what an event says beyond its reason and resource: the fields
// of muster's EventData that musterd fills.
type Data struct {
	Operation       string        `json:"operation,omitempty"`
	Error           string        `json:"error,omitempty"`
	Duration        time.Duration `json:"duration,omitempty"`
	StepCount       int           `json:"stepCount,omitempty"`
	StepID          string        `json:"stepId,omitempty"`
	StepTool        string        `json:"stepTool,omitempty"`
	ConditionResult string        `json:"conditionResult,omitempty"`
	ExecutionID     string        `json:"executionId,omitempty"`
	AllowFailure    bool          `json:"allowFailure,omitempty"`
}

// Event is one of muster's events about one resource.
type Event struct {
	Time      time.Time
	Kind      string // MCPServer or Workflow
	Namespace string
	Name      string
	Reason    Reason
	Type      string // Normal or Warning
	Message   string
	Data      Data
	// CorrelationID is the musterd event's that this one translates.
	CorrelationID string
}

// newEvent makes the event of reason about kind/namespace/name, with its
// severity and muster's message.
func newEvent(at time.Time, kind, namespace, name string, r Reason, d Data, correlation string) Event {
	return Event{Time: at, Kind: kind, Namespace: namespace, Name: name, Reason: r, Type: Severity(r),
		Message: Message(r, name, namespace, d), Data: d, CorrelationID: correlation}
}

// Message is muster's message of reason about the resource name in
// namespace, with d's details, word for word as muster's templates render
// them.
func Message(r Reason, name, namespace string, d Data) string {
	withErr := func(s string) string {
		if d.Error != "" {
			return s + ": " + d.Error
		}
		return s
	}
	steps := func(format string) string {
		if d.StepCount > 0 {
			return fmt.Sprintf(format, d.StepCount)
		}
		return ""
	}
	switch r {
	case MCPServerCreated:
		return "MCPServer " + name + " successfully created in namespace " + namespace
	case MCPServerUpdated:
		return "MCPServer " + name + " successfully updated in namespace " + namespace
	case MCPServerDeleted:
		return "MCPServer " + name + " successfully deleted from namespace " + namespace
	case MCPServerStarting:
		return "MCPServer " + name + " service is starting up"
	case MCPServerStarted:
		return "MCPServer " + name + " service started successfully"
	case MCPServerStopped:
		return "MCPServer " + name + " service stopped successfully"
	case MCPServerRestarting:
		return "MCPServer " + name + " service is restarting"
	case MCPServerFailed:
		return withErr("MCPServer " + name + " operation failed")
	case MCPServerToolsDiscovered:
		return "MCPServer " + name + " tools discovered and registered successfully"
	case MCPServerToolsUnavailable:
		return withErr("MCPServer " + name + " tools became unavailable")
	case MCPServerHealthCheckFailed:
		return withErr("MCPServer " + name + " health check failed")
	case MCPServerAuthRequired:
		return "MCPServer " + name + " requires OAuth authentication to connect"
	case WorkflowCreated:
		return "Workflow " + name + " successfully created" + steps(" with %d steps")
	case WorkflowUpdated:
		return "Workflow " + name + " successfully updated" + steps(" with %d steps")
	case WorkflowDeleted:
		return "Workflow " + name + " successfully deleted from namespace " + namespace
	case WorkflowValidationFailed:
		return withErr("Workflow " + name + " validation failed")
	case WorkflowValidationSucceeded:
		return "Workflow " + name + " validation completed successfully"
	case WorkflowExecutionStarted:
		return "Workflow " + name + " execution started" + execution(d.ExecutionID)
	case WorkflowExecutionCompleted:
		msg := "Workflow " + name + " execution completed successfully" + steps(" (%d steps)")
		if d.Duration > 0 {
			msg += " in " + d.Duration.String()
		}
		return msg
	case WorkflowExecutionFailed:
		msg := "Workflow " + name + " execution failed"
		if d.StepID != "" {
			msg += " at step " + d.StepID
		}
		return withErr(msg)
	case WorkflowExecutionTracked:
		return "Workflow " + name + " execution state persisted" + execution(d.ExecutionID)
	case WorkflowStepStarted:
		return "Workflow " + name + " step " + d.StepID + " started (tool: " + d.StepTool + ")"
	case WorkflowStepCompleted:
		return "Workflow " + name + " step " + d.StepID + " completed successfully"
	case WorkflowStepFailed:
		msg := "Workflow " + name + " step " + d.StepID + " failed"
		if d.AllowFailure {
			msg += " (allow_failure=true, continuing)"
		}
		return withErr(msg)
	case WorkflowStepSkipped:
		return "Workflow " + name + " step " + d.StepID + " skipped: condition evaluation returned " + d.ConditionResult
	case WorkflowStepConditionEvaluated:
		return "Workflow " + name + " step " + d.StepID + " condition evaluated to " + d.ConditionResult
	}
	return "Event: " + string(r) + " for " + namespace + "/" + name
}

func execution(id string) string {
	if id == "" {
		return ""
	}
	return " (execution: " + id + ")"
}

// TimeLayout is how muster shows an event's time.
const TimeLayout = "2006-01-02 15:04:05"

// View is an event as muster's core_events lists it.
type View struct {
	Timestamp    string `json:"timestamp"`
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	Namespace    string `json:"namespace"`
	Reason       string `json:"reason"`
	Message      string `json:"message"`
	Type         string `json:"type"`
}

// View returns e as core_events lists it.
func (e Event) View() View {
	return View{Timestamp: e.Time.Format(TimeLayout), ResourceType: e.Kind, ResourceName: e.Name,
		Namespace: e.Namespace, Reason: string(e.Reason), Message: e.Message, Type: e.Type}
}

// firstLine is s up to its first line break: a status's error may run on.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
