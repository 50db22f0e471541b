package memnet_test

import (
	"fmt"
	"io"
	"net/http"

	"github.com/heddlehq/heddle/internal/memnet"
)

// A server and a client on one in-memory network. In a test, all of this
// runs inside synctest.Test.
func ExampleNetwork_Server() {
	n := memnet.New()
	srv := n.Server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	}))
	defer srv.Close()
	tr := n.Transport()
	defer tr.CloseIdleConnections()

	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Println(string(b))
	// Output: hello from 127.0.0.1:10000
}
