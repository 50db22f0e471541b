package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A frame is one function on a sampled stack. Inlined calls are frames of
// their own, as pprof shows them.
type frame struct {
	Func string // "net/http.(*persistConn).readLoop"
	File string
}

// A sample is one stack of a CPU profile, leaf first, and the CPU time it
// stands for.
type sample struct {
	Stack []frame
	Count int64 // samples taken of the stack
	CPU   int64 // nanoseconds
}

// readProfile decodes a CPU profile in pprof's protocol-buffer format (the
// one runtime/pprof writes, gzipped or not). It reads only what the
// attribution needs — samples, locations, functions and strings — so that
// the module needs no protobuf library for it. profile.proto
// (github.com/google/pprof/proto/profile.proto) defines the fields.
func readProfile(data []byte) ([]sample, error) {
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("profile: %w", err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("profile: %w", err)
		}
	}
	var (
		strs     []string
		types    [][2]int64 // sample_type: (type, unit) string indices
		samples  [][]byte
		locs     = map[uint64][][2]uint64{} // location id → lines (function id, line), innermost first
		funcs    = map[uint64][2]int64{}    // function id → (name, filename) string indices
		fieldErr error
	)
	err := protoFields(data, func(num int, wire int, v uint64, b []byte) {
		switch {
		case num == 1 && wire == 2: // sample_type
			var t [2]int64
			fieldErr = errors.Join(fieldErr, protoFields(b, func(num, wire int, v uint64, _ []byte) {
				if wire == 0 && (num == 1 || num == 2) {
					t[num-1] = int64(v)
				}
			}))
			types = append(types, t)
		case num == 2 && wire == 2: // sample
			samples = append(samples, b)
		case num == 4 && wire == 2: // location
			id, lines, err := decodeLocation(b)
			fieldErr = errors.Join(fieldErr, err)
			locs[id] = lines
		case num == 5 && wire == 2: // function
			var id uint64
			var f [2]int64
			fieldErr = errors.Join(fieldErr, protoFields(b, func(num, wire int, v uint64, _ []byte) {
				switch {
				case wire != 0:
				case num == 1:
					id = v
				case num == 2:
					f[0] = int64(v)
				case num == 4:
					f[1] = int64(v)
				}
			}))
			funcs[id] = f
		case num == 6 && wire == 2: // string_table
			strs = append(strs, string(b))
		}
	})
	if err = errors.Join(err, fieldErr); err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	str := func(i int64) string {
		if i < 0 || i >= int64(len(strs)) {
			return ""
		}
		return strs[i]
	}
	cpu, count := -1, -1
	for i, t := range types {
		switch str(t[1]) {
		case "nanoseconds":
			cpu = i
		case "count":
			count = i
		}
	}
	if cpu < 0 {
		return nil, errors.New("profile: no sample value in nanoseconds; not a CPU profile")
	}
	out := make([]sample, 0, len(samples))
	for _, b := range samples {
		ids, values, err := decodeSample(b)
		if err != nil {
			return nil, fmt.Errorf("profile: %w", err)
		}
		if cpu >= len(values) {
			return nil, errors.New("profile: a sample has fewer values than sample types")
		}
		s := sample{Count: 1, CPU: values[cpu]}
		if count >= 0 && count < len(values) {
			s.Count = values[count]
		}
		for _, id := range ids {
			for _, l := range locs[id] {
				f := funcs[l[0]]
				s.Stack = append(s.Stack, frame{Func: str(f[0]), File: str(f[1])})
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// decodeLocation returns a Location's id and its lines as (function id,
// line) pairs, innermost inlined call first.
func decodeLocation(b []byte) (uint64, [][2]uint64, error) {
	var (
		id    uint64
		lines [][2]uint64
		inner error
	)
	err := protoFields(b, func(num, wire int, v uint64, b []byte) {
		switch {
		case num == 1 && wire == 0:
			id = v
		case num == 4 && wire == 2:
			var l [2]uint64
			inner = errors.Join(inner, protoFields(b, func(num, wire int, v uint64, _ []byte) {
				if wire == 0 && (num == 1 || num == 2) {
					l[num-1] = v
				}
			}))
			lines = append(lines, l)
		}
	})
	return id, lines, errors.Join(err, inner)
}

// decodeSample returns a Sample's location ids (leaf first) and values.
// Repeated numbers may come packed or one field each.
func decodeSample(b []byte) (ids []uint64, values []int64, err error) {
	var inner error
	err = protoFields(b, func(num, wire int, v uint64, b []byte) {
		var vs []uint64
		switch wire {
		case 0:
			vs = []uint64{v}
		case 2:
			vs, inner = packed(b)
		}
		switch num {
		case 1:
			ids = append(ids, vs...)
		case 2:
			for _, v := range vs {
				values = append(values, int64(v))
			}
		}
	})
	return ids, values, errors.Join(err, inner)
}

// packed decodes a packed run of varints.
func packed(b []byte) ([]uint64, error) {
	var out []uint64
	for len(b) > 0 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("bad packed varint")
		}
		out = append(out, v)
		b = b[n:]
	}
	return out, nil
}

// protoFields calls f for each field of the protocol-buffer message msg: its number, wire type, and value (a
// varint) or bytes (a length-delimited field). Fixed-width fields are
// skipped; groups are refused.
func protoFields(msg []byte, f func(num, wire int, v uint64, b []byte)) error {
	for len(msg) > 0 {
		key, n := binary.Uvarint(msg)
		if n <= 0 {
			return errors.New("bad field key")
		}
		msg = msg[n:]
		num, wire := int(key>>3), int(key&7)
		switch wire {
		case 0:
			v, n := binary.Uvarint(msg)
			if n <= 0 {
				return fmt.Errorf("field %d: bad varint", num)
			}
			f(num, wire, v, nil)
			msg = msg[n:]
		case 1, 5:
			size := 8
			if wire == 5 {
				size = 4
			}
			if len(msg) < size {
				return fmt.Errorf("field %d: truncated", num)
			}
			msg = msg[size:]
		case 2:
			l, n := binary.Uvarint(msg)
			if n <= 0 || l > uint64(len(msg)-n) {
				return fmt.Errorf("field %d: bad length", num)
			}
			f(num, wire, 0, msg[n:n+int(l)])
			msg = msg[n+int(l):]
		default:
			return fmt.Errorf("field %d: unsupported wire type %d", num, wire)
		}
	}
	return nil
}
