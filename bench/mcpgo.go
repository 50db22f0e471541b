package main

import (
	"context"
	"fmt"
	"os/exec"

	mcpgo "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// dialMCPGo connects and initializes an mcp-go client to t, with the
// library's default protocol negotiation. The returned function closes
// it.
func dialMCPGo(ctx context.Context, t target) (*mcpgo.Client, func() error, error) {
	var (
		c         *mcpgo.Client
		closeIdle = func() {}
		err       error
	)
	if t.stdio() {
		// The same command as every client's; not tied to ctx, which
		// would kill the server when the connect's deadline passes.
		cmdFunc := func(_ context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd := serverCommand(command)
			cmd.Args = append(cmd.Args, args...)
			return cmd, nil
		}
		c, err = mcpgo.NewStdioMCPClientWithOptions(t.bin, nil, nil, transport.WithCommandFunc(cmdFunc))
	} else {
		hc, ci := pooledHTTPClient()
		closeIdle = ci
		if c, err = mcpgo.NewStreamableHttpClient(t.url, transport.WithHTTPBasicClient(hc)); err == nil {
			err = c.Start(ctx)
		}
	}
	if err != nil {
		closeIdle()
		return nil, nil, fmt.Errorf("mcp-go: %w", err)
	}
	closeAll := func() error {
		err := c.Close()
		closeIdle()
		return err
	}
	var req mcp.InitializeRequest
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if !t.stdio() {
		// mcp-go's fallback from server/discover to initialize asks a
		// stateful HTTP server for 2026-07-28, which it refuses; go-sdk's
		// settles on 2025-11-25 with it, and so is mcp-go pinned to it.
		req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	}
	req.Params.ClientInfo = mcp.Implementation{Name: "bench-mcp-go", Version: "0"}
	if _, err := c.Initialize(ctx, req); err != nil {
		_ = closeAll()
		return nil, nil, fmt.Errorf("mcp-go initialize: %w", err)
	}
	return c, closeAll, nil
}

// openMCPGo connects one mcp-go client to t, shared by every caller.
func openMCPGo(ctx context.Context, t target) (client, error) {
	c, closeAll, err := dialMCPGo(ctx, t)
	if err != nil {
		return nil, err
	}
	call := func(ctx context.Context, tool string, args map[string]any) error {
		var req mcp.CallToolRequest
		req.Params.Name = tool
		req.Params.Arguments = args
		res, err := c.CallTool(ctx, req)
		switch {
		case err != nil:
			return err
		case res.IsError:
			return fmt.Errorf("tool error: %v", res.Content)
		}
		return nil
	}
	return inProcess{goClient{call: call, close: closeAll, proto: c.ProtocolVersion()}}, nil
}
