package grpc

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/dustin/go-humanize"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
)

// replyJSON is a checked reply's messages as JSON (protojson's field
// names, compacted): the message of a unary call, the list of a stream's.
// A scenario's checks and extractions read it. The JSON is held to limit
// (the run's --max-body) before it is written: a schema the server chose
// can make a message's JSON hundreds of times its bytes (a packed enum of
// long names), so each message's widest JSON is reckoned first.
func (m *grpcMethod) replyJSON(body []byte, limit int) ([]byte, error) {
	var msgs [][]byte
	bound := 2
	_, err := m.decodeMessages(body, func(msg *dynamicpb.Message) error {
		if bound += jsonBound(msg) + 1; bound > limit {
			return fmt.Errorf("the reply's messages as JSON could be %s, over --max-body %s: "+
				"probe does not write them for the step's checks and extractions",
				humanize.IBytes(uint64(bound)), humanize.IBytes(uint64(limit)))
		}
		j, err := protojson.Marshal(msg)
		if err != nil {
			return err
		}
		var c bytes.Buffer
		if err := json.Compact(&c, j); err != nil { // protojson's spacing varies on purpose
			return err
		}
		msgs = append(msgs, c.Bytes())
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case !m.streaming && len(msgs) == 1:
		return msgs[0], nil
	}
	return append(append([]byte("["), bytes.Join(msgs, []byte(","))...), ']'), nil
}

// jsonBound is at least the bytes protojson writes for m, compacted: each
// set field's name and punctuation, each value at its widest (a string
// as if every byte were escaped, a number at 26 characters, an enum at its
// name's length). Its cost is one walk of the decoded message.
func jsonBound(m protoreflect.Message) int {
	if m.Descriptor().FullName() == "google.protobuf.Any" {
		return anyBound(m)
	}
	n := 2
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		n += len(fd.JSONName()) + 4
		switch {
		case fd.IsList():
			l := v.List()
			n += 2
			for i := range l.Len() {
				n += valueBound(fd, l.Get(i)) + 1
			}
		case fd.IsMap():
			n += 2
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				n += valueBound(fd.MapKey(), k.Value()) + 3 + valueBound(fd.MapValue(), mv) + 1
				return true
			})
		default:
			n += valueBound(fd, v)
		}
		return true
	})
	return n
}

func valueBound(fd protoreflect.FieldDescriptor, v protoreflect.Value) int {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return 2 + 6*len(v.String())
	case protoreflect.BytesKind:
		return 6 + 4*(len(v.Bytes())+2)/3
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return jsonBound(v.Message())
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return 2 + len(ev.Name())
		}
	case protoreflect.BoolKind:
		return 5
	}
	return 26 // a number: a 64-bit integer is a quoted string, a double up to 24 characters
}

// anyBound is an Any's: protojson writes its message in place, when its
// type is one probe knows (else Marshal fails, and nothing is written).
func anyBound(m protoreflect.Message) int {
	fields := m.Descriptor().Fields()
	url := m.Get(fields.ByName("type_url")).String()
	value := m.Get(fields.ByName("value")).Bytes()
	n := 16 + 6*len(url)
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(url)
	if err != nil {
		return n + 6 + 4*(len(value)+2)/3
	}
	inner := mt.New()
	if err := (proto.UnmarshalOptions{}).Unmarshal(value, inner.Interface()); err != nil {
		return n
	}
	return n + jsonBound(inner)
}
