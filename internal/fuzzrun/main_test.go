package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseProgress(t *testing.T) {
	for _, tc := range []struct {
		line string
		want progress
		ok   bool
	}{
		{"fuzz: elapsed: 20s, execs: 123456 (6172/sec), new interesting: 12 (total: 40)",
			progress{seen: true, elapsed: 20 * time.Second, execs: 123456, interesting: 12, corpus: 40}, true},
		// Without coverage instrumentation go test counts no new inputs.
		{"fuzz: elapsed: 3s, execs: 18745 (6248/sec)", progress{seen: true, elapsed: 3 * time.Second, execs: 18745}, true},
		{"fuzz: elapsed: 1m3s, execs: 7 (0/sec), new interesting: 0 (total: 9)",
			progress{seen: true, elapsed: 63 * time.Second, execs: 7, corpus: 9}, true},
		{"fuzz: elapsed: 0s, gathering baseline coverage: 0/29 completed", progress{}, false},
		{"ok  	github.com/heddlehq/heddle/config	21.2s", progress{}, false},
	} {
		got, ok := parseProgress(tc.line)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseProgress(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func TestFuzzFunc(t *testing.T) {
	src := "func FuzzA(f *testing.F) {}\nfunc FuzzB( f  *testing.F ) {\n// func FuzzC(f *testing.F)\nfunc TestD(t *testing.T) {}\nfunc FuzzE(t *testing.T) {}\n"
	var got []string
	for _, m := range fuzzFunc.FindAllStringSubmatch(src, -1) {
		got = append(got, m[1])
	}
	if strings.Join(got, " ") != "FuzzA FuzzB" {
		t.Errorf("found %v, want FuzzA FuzzB", got)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 123456: "123,456", 1234567: "1,234,567", -1000: "-1,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestSummary(t *testing.T) {
	var b strings.Builder
	results := []result{
		{target: target{pkg: module + "/config", name: "FuzzParseYAML"}, progress: progress{seen: true, elapsed: 20 * time.Second, execs: 22346, interesting: 85, corpus: 192}, wall: 24 * time.Second},
		{target: target{pkg: module, name: "FuzzX"}, err: "failing input testdata/fuzz/FuzzX/1"},
		{target: target{pkg: module + "/runtime", name: "FuzzY"}, race: true},
	}
	writeSummary(&b, results, 20*time.Second, time.Minute, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	out := b.String()
	for _, want := range []string{"fuzz run of 2026-12-02: 3 targets, 20s each", "| config ", "| FuzzParseYAML ", "| 22,346 ", "| ok ", "| . ", "| FuzzX ", "| FAIL ", "| ok (go#75804) "} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}
