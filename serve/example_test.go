package serve_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"

	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/serve"
)

// A worker of one's own: the front door of a runtime on a listener, with
// the limits, Host names and caller authentication of the plan's serve:
// section.
func ExampleServer_Serve() {
	ctx := context.Background()
	p, err := plantest.Compile("serve:\n  auth: {kind: none}\nai: {}\n",
		map[string]string{"desk": "description: A help desk.\ncapabilities: [{kind: usecase, keys: [serve.echo]}]\n"}, "serve.echo")
	if err != nil {
		log.Fatal(err)
	}
	rt, err := runtime.Open(ctx, p, runtime.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	s, err := serve.New(ctx, rt, &serve.Options{Addr: ln.Addr()})
	if err != nil {
		log.Fatal(err)
	}
	go s.Serve(ln)
	defer s.Shutdown(ctx)

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr}).Get("http://" + ln.Addr().String() + "/v1/agents")
	if err != nil {
		log.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Print(res.Status, " ", string(body))
	// Output: 200 OK [{"name":"desk","description":"A help desk.","tools":1}]
}
