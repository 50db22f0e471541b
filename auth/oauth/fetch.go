package oauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
)

// listenerFetcher gets the authorization code the way a headless worker
// can: it listens at the loopback redirect URL, logs the authorization URL
// at INFO for an operator to open (through an SSH tunnel to the port, or a
// browser on the same host), and waits for the authorization server to
// redirect there. The listener exists only while one authorization waits.
func listenerFetcher(name, redirect string, log *slog.Logger) sdkauth.AuthorizationCodeFetcher {
	ru, _ := url.Parse(redirect) // checked by validate
	path := ru.Path
	if path == "" {
		path = "/"
	}
	return func(ctx context.Context, args *sdkauth.AuthorizationArgs) (*sdkauth.AuthorizationResult, error) {
		au, err := url.Parse(args.URL)
		if err != nil {
			return nil, errors.New("the authorization URL does not parse")
		}
		state := au.Query().Get("state")
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", ru.Host)
		if err != nil {
			return nil, fmt.Errorf("cannot listen at redirect_url %s: %w", redirect, err)
		}
		type outcome struct {
			res *sdkauth.AuthorizationResult
			err error
		}
		got := make(chan outcome, 1)
		mux := http.NewServeMux()
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			if q.Get("state") != state {
				http.Error(w, "heddle: this is not the authorization heddle is waiting for", http.StatusBadRequest)
				return
			}
			var o outcome
			switch {
			case q.Get("error") != "":
				o.err = fmt.Errorf("the authorization server refused: %s", q.Get("error"))
				http.Error(w, "heddle: authorization refused ("+q.Get("error")+")", http.StatusForbidden)
			case q.Get("code") == "":
				http.Error(w, "heddle: the redirect carries no code", http.StatusBadRequest)
				return
			default:
				o.res = &sdkauth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				fmt.Fprintf(w, "heddle: %s is authorized. You can close this page.\n", name)
			}
			select {
			case got <- o:
			default:
			}
		})
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx) // lets the page above reach the browser
		}()
		log.Info("oauth: authorization needed: open this URL in a browser and approve; heddle waits for the redirect",
			"server", name, "url", args.URL, "redirect_url", redirect)
		select {
		case o := <-got:
			return o.res, o.err
		case <-ctx.Done():
			return nil, fmt.Errorf("no authorization arrived at redirect_url %s: %w", redirect, ctx.Err())
		}
	}
}

// noFetcher is the fetcher of a strategy that has only a refresh token: a
// full authorization cannot happen without a person.
func noFetcher(name string) sdkauth.AuthorizationCodeFetcher {
	return func(context.Context, *sdkauth.AuthorizationArgs) (*sdkauth.AuthorizationResult, error) {
		return nil, fmt.Errorf("%s needs a new authorization (the refresh token was rejected, or more scope is needed), and no redirect_url is configured: provision a new refresh_token_ref, or set redirect_url", name)
	}
}

// RedirectFetcher returns a fetcher for authorization servers that approve
// without a person: it GETs the authorization URL without following the
// redirect and reads code, state and iss from its Location. The MCP
// conformance suite's mock authorization server works this way; so do test
// servers. client may be nil (a plain client with a 30 s timeout).
func RedirectFetcher(client *http.Client) sdkauth.AuthorizationCodeFetcher {
	c := &http.Client{Timeout: 30 * time.Second}
	if client != nil {
		cp := *client
		c = &cp
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return func(ctx context.Context, args *sdkauth.AuthorizationArgs) (*sdkauth.AuthorizationResult, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
		if err != nil {
			return nil, errors.New("the authorization URL does not parse")
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, fmt.Errorf("authorization request: %w", err)
		}
		drain(resp)
		loc, err := resp.Location()
		if err != nil || resp.StatusCode < 300 || resp.StatusCode > 399 {
			return nil, fmt.Errorf("the authorization endpoint answered %d, not a redirect", resp.StatusCode)
		}
		q := loc.Query()
		if e := q.Get("error"); e != "" {
			return nil, fmt.Errorf("the authorization server refused: %s", e)
		}
		if q.Get("code") == "" {
			return nil, errors.New("the authorization redirect carries no code")
		}
		return &sdkauth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
}
