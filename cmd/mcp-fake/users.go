package main

import (
	"context"
	"crypto/subtle"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// userTokens are the bearer tokens a server of -bearer-users takes, each
// as its user's, so that a test can tell two users' connections apart,
// and a user's token refreshed from another of the same user's.
type userTokens struct {
	tokens map[string]string // token → user
}

var bearerUsers userTokens

func (u *userTokens) register(fs *flag.FlagSet) {
	fs.Func("bearer-users", "with -http: comma-separated USER=TOKEN pairs; answer 401 (as -require-bearer does) to a request without one of "+
		"these tokens, and take each as its user's (a user may have several); the tool whoami answers the user and token of its request",
		func(v string) error {
			u.tokens = map[string]string{}
			for pair := range strings.SplitSeq(v, ",") {
				user, token, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if !ok || user == "" || token == "" {
					return fmt.Errorf("bearer-users: %q is not USER=TOKEN", pair)
				}
				u.tokens[token] = user
			}
			return nil
		})
}

// verify takes the tokens of -bearer-users, each as its user's: the
// go-sdk then keeps a session to the user who opened it.
func (u *userTokens) verify(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
	for token, user := range u.tokens {
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1 {
			return &auth.TokenInfo{UserID: user, Expiration: time.Now().Add(time.Hour), Extra: map[string]any{"token": token}}, nil
		}
	}
	return nil, auth.ErrInvalidToken
}

// bearerVerifier is what guards the HTTP endpoints: -bearer-users, else
// -require-bearer's one token, else nothing (nil).
func bearerVerifier(token string) auth.TokenVerifier {
	switch {
	case len(bearerUsers.tokens) > 0:
		return bearerUsers.verify
	case token != "":
		return oneToken(token)
	}
	return nil
}

func init() {
	specialTools["whoami"] = whoamiTool
	specialTools["add_tool"] = addToolTool
}

// serving is the server the tools are added to.
var serving *mcp.Server

// addToolTool adds an echo tool named by its argument "name", notifying
// the clients that the tools changed, and answers "added NAME".
func addToolTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name, _ := arguments(req)["name"].(string)
	if name == "" {
		return nil, fmt.Errorf("add_tool: no name")
	}
	addEchoTool(serving, name)
	return textResult("added " + name), nil
}

// whoamiTool answers "USER TOKEN": who the bearer token of its request
// belongs to, and the token, as -bearer-users took it; "anonymous -"
// without one. Under -authorization-server it answers "USER " alone.
func whoamiTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var info *auth.TokenInfo
	if req.Extra != nil {
		info = req.Extra.TokenInfo
	}
	if info == nil {
		return textResult("anonymous -"), nil
	}
	token, _ := info.Extra["token"].(string)
	return textResult(info.UserID + " " + token), nil
}
