package grpc

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// ampMessage is a message a hostile schema makes: a packed enum whose
// value's name is 200 characters, packed integers, a string, a nested
// message and a map.
func ampMessage(t *testing.T) protoreflect.MessageDescriptor {
	t.Helper()
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	fd := &descriptorpb.FileDescriptorProto{
		Name: proto.String("amp.proto"), Package: proto.String("amp"), Syntax: proto.String("proto3"),
		EnumType: []*descriptorpb.EnumDescriptorProto{{Name: proto.String("E"), Value: []*descriptorpb.EnumValueDescriptorProto{
			{Name: proto.String("ZERO"), Number: proto.Int32(0)}, {Name: proto.String(strings.Repeat("A", 200)), Number: proto.Int32(1)}}}},
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("M"),
			Field: []*descriptorpb.FieldDescriptorProto{
				{Name: proto.String("e"), Number: proto.Int32(1), Label: rep, Type: descriptorpb.FieldDescriptorProto_TYPE_ENUM.Enum(),
					TypeName: proto.String(".amp.E")},
				{Name: proto.String("n"), Number: proto.Int32(2), Label: rep, Type: descriptorpb.FieldDescriptorProto_TYPE_INT64.Enum()},
				{Name: proto.String("s"), Number: proto.Int32(3), Label: opt, Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()},
				{Name: proto.String("kids"), Number: proto.Int32(4), Label: rep, Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(),
					TypeName: proto.String(".amp.M")},
				{Name: proto.String("tags"), Number: proto.Int32(5), Label: rep, Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(),
					TypeName: proto.String(".amp.M.TagsEntry")},
			},
			NestedType: []*descriptorpb.DescriptorProto{{Name: proto.String("TagsEntry"),
				Options: &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)},
				Field: []*descriptorpb.FieldDescriptorProto{
					{Name: proto.String("key"), Number: proto.Int32(1), Label: opt, Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()},
					{Name: proto.String("value"), Number: proto.Int32(2), Label: opt, Type: descriptorpb.FieldDescriptorProto_TYPE_BOOL.Enum()}}}}}},
	}
	f, err := protodesc.NewFile(fd, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f.Messages().ByName("M")
}

// A reply whose JSON would be hundreds of times its bytes is refused
// before its JSON is written; the bound is never below what protojson
// writes, on random messages of every kind of field.
func TestReplyJSONIsHeldToTheLimit(t *testing.T) {
	md := ampMessage(t)
	m := grpcMethod{output: md, streaming: true}
	var msg []byte
	msg = protowire.AppendTag(msg, 1, protowire.BytesType)
	msg = protowire.AppendBytes(msg, bytes.Repeat([]byte{1}, 1<<20)) // 1 MiB: 200 MiB of JSON
	if j, err := m.replyJSON(grpcFrame(msg), 64<<20); err == nil || !strings.Contains(err.Error(), "over --max-body 64 MiB") {
		t.Fatalf("a 1 MiB reply of long enum names: %d bytes of JSON, %v; want it refused", len(j), err)
	}

	rnd := rand.New(rand.NewPCG(1, 2))
	var fill func(depth int) *dynamicpb.Message
	fill = func(depth int) *dynamicpb.Message {
		x := dynamicpb.NewMessage(md)
		fields := md.Fields()
		for range rnd.IntN(20) {
			x.Mutable(fields.ByName("e")).List().Append(protoreflect.ValueOfEnum(protoreflect.EnumNumber(rnd.IntN(3))))
			x.Mutable(fields.ByName("n")).List().Append(protoreflect.ValueOfInt64(rnd.Int64() - rnd.Int64()))
		}
		b := make([]byte, rnd.IntN(40))
		for i := range b {
			b[i] = byte(rnd.IntN(256)) // control bytes, quotes and invalid UTF-8 among them
		}
		s := strings.ToValidUTF8(string(b), "?")
		x.Set(fields.ByName("s"), protoreflect.ValueOfString(s))
		for range rnd.IntN(4) {
			key := strings.ToValidUTF8(s[:rnd.IntN(len(s)+1)], "?")
			x.Mutable(fields.ByName("tags")).Map().Set(protoreflect.ValueOfString(key).MapKey(), protoreflect.ValueOfBool(rnd.IntN(2) == 0))
		}
		if depth < 3 {
			for range rnd.IntN(3) {
				x.Mutable(fields.ByName("kids")).List().Append(protoreflect.ValueOfMessage(fill(depth + 1)))
			}
		}
		return x
	}
	for i := range 300 {
		x := fill(0)
		wire, err := proto.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		j, err := (&grpcMethod{output: md}).replyJSON(grpcFrame(wire), 64<<20)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		back := dynamicpb.NewMessage(md)
		proto.Unmarshal(wire, back)
		if b := jsonBound(back); b < len(j) {
			t.Fatalf("message %d: bound %d under the %d bytes of its JSON: %s", i, b, len(j), j)
		}
	}
}
