//lint:file-ignore SA1019 roots, sampling and logging are deprecated in 2026-07-28 but still part of MCP, and musterd passes them on in both generations

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/peer"
)

// A 2026-07-28 server does not send its client requests: a tool call,
// prompt or resource read that needs the client's input ends with an
// input-required result, its InputRequests (elicitation/create,
// sampling/createMessage, roots/list by another name) and an opaque
// RequestState, and the client calls again with InputResponses and the
// same RequestState. The server keeps nothing meanwhile.
//
// musterd fulfils these itself, on the call's own context, exactly as it
// passes on the same requests of an older server (clientrequests.go): on a
// lane each goes to the lane's client, refused if the client did not offer
// it, answered with an error at once if the client goes away; the shared
// session refuses them all, saying why. A client of the older generation
// thus gets classic elicitation/create, sampling/createMessage and
// roots/list requests for a newer server's input requests. The go-sdk's
// own fulfilment is off (instance.connect): it would answer roots/list from
// a root set of its own, and bypass the refusals.
//
// A call that cannot be fulfilled fails with a JSON-RPC error naming the
// input request and why; the server has nothing to wait for. A call waiting
// for its client is bounded, as every call, by the server's spec.timeout,
// and ends at once when its client's session does.

// maxInputRounds bounds the rounds of input one call may take, as the
// go-sdk's own fulfilment does: a server that asks again and again fails
// the call rather than keep it alive for good.
const maxInputRounds = 10

// inputMethod names each kind of input request by the request it stands
// for, for refusals and errors.
func inputMethod(r mcp.InputRequest) string {
	switch r.(type) {
	case *mcp.ElicitParams:
		return methodElicit
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return methodCreateMessage
	case *mcp.ListRootsParams:
		return methodListRoots
	default:
		return fmt.Sprintf("%T", r)
	}
}

// inputError is the error of a call whose input could not be had: a JSON-RPC
// error, since the server answered (the call says so, not its transport).
func inputError(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// fulfil gets the responses to a server's input requests of one round
// from inst's client.
func (inst *instance) fulfil(ctx context.Context, round int, requests mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	if round > maxInputRounds {
		return nil, inputError("musterd: the server asked for input more than %d times in one call", maxInputRounds)
	}
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range requests {
			if !yield(id) {
				return
			}
		}
	})
	responses := make(mcp.InputResponseMap, len(ids))
	for _, id := range ids {
		r := requests[id]
		method := inputMethod(r)
		if reason := inst.inputRefusal(ctx, method); reason != "" {
			inst.log.Debug("mcp server: refused an input request of the server's", "key", inst.key.String(), "method", method, "reason", reason)
			return nil, inputError("input request %q of the server's result: %s", id, reason)
		}
		resp, err := inst.input(ctx, r)
		if err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			var rpcErr *jsonrpc.Error
			if errors.As(err, &rpcErr) {
				return nil, &jsonrpc.Error{Code: rpcErr.Code, Message: fmt.Sprintf("input request %q (%s) of the server's result: %s", id, method, rpcErr.Message)}
			}
			return nil, inputError("input request %q (%s) of the server's result: %v", id, method, err)
		}
		responses[id] = resp
	}
	return responses, nil
}

// inputRefusal says why a server's input request of method cannot go to
// the client of the call ctx, or "" if it can: a client of 2026-07-28 on
// whose behalf the call was made by a way that cannot carry its questions
// (peer.Unrelayable) is told so, and what to call instead; else as
// refusal.
func (inst *instance) inputRefusal(ctx context.Context, method string) string {
	if inst.lane == nil && peer.Unrelayable(ctx) {
		return fmt.Sprintf("musterd: %s refused: the client speaks MCP 2026-07-28, and this call was made for it by a way that cannot "+
			"carry the server's question to it nor its answer back (muster's call_tool, get_prompt or get_resource, or a workflow's step); "+
			"call it natively instead: tools/call, prompts/get or resources/read on musterd's direct view or the server's own", method)
	}
	return inst.refusal(method)
}

// input passes one input request to the lane's client (ask).
func (inst *instance) input(ctx context.Context, r mcp.InputRequest) (mcp.InputResponse, error) {
	l := inst.lane // refusal has made sure there is one
	switch p := r.(type) {
	case *mcp.ElicitParams:
		return ask(ctx, l, func(ctx context.Context, c peer.Peer) (mcp.InputResponse, error) { return c.Elicit(ctx, p) })
	case *mcp.CreateMessageWithToolsParams:
		return ask(ctx, l, func(ctx context.Context, c peer.Peer) (mcp.InputResponse, error) { return c.CreateMessage(ctx, p) })
	case *mcp.CreateMessageParams:
		return ask(ctx, l, func(ctx context.Context, c peer.Peer) (mcp.InputResponse, error) {
			return c.CreateMessage(ctx, withTools(p))
		})
	case *mcp.ListRootsParams:
		return ask(ctx, l, func(ctx context.Context, c peer.Peer) (mcp.InputResponse, error) { return c.ListRoots(ctx, p) })
	default:
		return nil, fmt.Errorf("musterd does not know input requests of type %T", r)
	}
}

// withTools is a sampling request in the form a client is asked in. (The
// go-sdk reads a result's sampling requests in this form already; a
// CreateMessageParams comes only from Go code.)
func withTools(p *mcp.CreateMessageParams) *mcp.CreateMessageWithToolsParams {
	msgs := make([]*mcp.SamplingMessageV2, 0, len(p.Messages))
	for _, m := range p.Messages {
		msgs = append(msgs, &mcp.SamplingMessageV2{Role: m.Role, Content: []mcp.Content{m.Content}})
	}
	return &mcp.CreateMessageWithToolsParams{
		Meta: p.Meta, IncludeContext: p.IncludeContext, MaxTokens: p.MaxTokens, Messages: msgs, Metadata: p.Metadata,
		ModelPreferences: p.ModelPreferences, StopSequences: p.StopSequences, SystemPrompt: p.SystemPrompt, Temperature: p.Temperature,
	}
}

// needsInput reports whether a result asks for input: marked so
// (resultType input_required, on a 2026-07-28 session), or carrying input
// requests all the same. A go-sdk server turns its input requests into
// classic requests for a session of 2025-11-25, but once only: the input
// requests of a second round come back in the result, unmarked, and are
// fulfilled here like any other.
func needsInput(marked bool, requests mcp.InputRequestMap) bool {
	return marked || len(requests) > 0
}

// inputRound is what a request is sent again with after its server asked
// for input: the client's answers, and the server's request state.
type inputRound struct {
	responses mcp.InputResponseMap
	state     string
}

// roundTrips sends a request that a server may answer with an
// input-required result (tools/call, prompts/get, resources/read) until
// its result is complete, fulfilling the server's input requests between
// rounds; for a client that takes them itself (peer.Relays: one of
// 2026-07-28) the server's input-required result is the request's, and its
// retry comes back as a new request. send sends the request, as the caller
// made it for a nil round, else with the round's answers and state; asked
// reads a result's input requests and request state.
func roundTrips[R interface{ NeedsInput() bool }](ctx context.Context, inst *instance,
	send func(*inputRound) (R, error), asked func(R) (mcp.InputRequestMap, string)) (R, error) {
	var next *inputRound
	for n := 1; ; n++ {
		res, err := send(next)
		if err != nil {
			return res, err
		}
		requests, state := asked(res)
		if !needsInput(res.NeedsInput(), requests) || peer.Relays(ctx) {
			return res, nil
		}
		responses, err := inst.fulfil(ctx, n, requests)
		if err != nil {
			var zero R
			return zero, err
		}
		next = &inputRound{responses: responses, state: state}
	}
}

// callTool calls a tool on inst's session (roundTrips).
func (inst *instance) callTool(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	return roundTrips(ctx, inst, func(r *inputRound) (*mcp.CallToolResult, error) {
		if r != nil {
			q := *p
			q.InputResponses, q.RequestState = r.responses, r.state
			p = &q
		}
		return inst.session.CallTool(ctx, p)
	}, func(res *mcp.CallToolResult) (mcp.InputRequestMap, string) {
		return res.InputRequests, res.RequestState
	})
}

// getPrompt gets a prompt on inst's session (roundTrips).
func (inst *instance) getPrompt(ctx context.Context, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return roundTrips(ctx, inst, func(r *inputRound) (*mcp.GetPromptResult, error) {
		if r != nil {
			q := *p
			q.InputResponses, q.RequestState = r.responses, r.state
			p = &q
		}
		return inst.session.GetPrompt(ctx, p)
	}, func(res *mcp.GetPromptResult) (mcp.InputRequestMap, string) {
		return res.InputRequests, res.RequestState
	})
}

// readResource reads a resource on inst's session (roundTrips).
func (inst *instance) readResource(ctx context.Context, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return roundTrips(ctx, inst, func(r *inputRound) (*mcp.ReadResourceResult, error) {
		if r != nil {
			q := *p
			q.InputResponses, q.RequestState = r.responses, r.state
			p = &q
		}
		return inst.session.ReadResource(ctx, p)
	}, func(res *mcp.ReadResourceResult) (mcp.InputRequestMap, string) {
		return res.InputRequests, res.RequestState
	})
}

// capabilitiesOnTheWire are client capabilities as a client of 2026-07-28
// sends them in a request's _meta, the go-sdk's encoding: roots is
// RootsV2, absent when the client offers no roots (its field shadows the
// embedded Roots, which would always be there).
type capabilitiesOnTheWire struct {
	mcp.ClientCapabilities
	Roots *mcp.RootCapabilities `json:"roots,omitempty"`
}

// onTheWire encodes caps so; nil is none offered.
func onTheWire(caps *mcp.ClientCapabilities) capabilitiesOnTheWire {
	if caps == nil {
		return capabilitiesOnTheWire{}
	}
	return capabilitiesOnTheWire{ClientCapabilities: *caps, Roots: caps.RootsV2}
}
