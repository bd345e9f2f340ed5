package envoyconfig

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// MarshalJSON renders b as indented JSON with proto field names, the form
// Envoy's -c accepts. JSON is also valid YAML, so the bytes may be saved
// under a .yaml name; only .pb and .pb_text names would be misread.
// The output is for people and Envoy, not for comparison: protojson
// deliberately varies whitespace between builds (use Hash to compare).
func MarshalJSON(b *bootstrapv3.Bootstrap) ([]byte, error) {
	out, err := protojson.MarshalOptions{UseProtoNames: true, Multiline: true, Indent: "  "}.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("envoyconfig: marshal bootstrap to JSON: %w", err)
	}
	return append(out, '\n'), nil
}

// WriteFile writes b as JSON (see MarshalJSON) to path.
func WriteFile(path string, b *bootstrapv3.Bootstrap) error {
	out, err := MarshalJSON(b)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return fmt.Errorf("envoyconfig: write bootstrap: %w", err)
	}
	return nil
}

// Hash identifies a bootstrap's content: the hex SHA-256 of its
// deterministic binary encoding, stable across calls and runs of the same
// build (unlike protojson output).
func Hash(b *bootstrapv3.Bootstrap) (string, error) {
	wire, err := proto.MarshalOptions{Deterministic: true}.Marshal(b)
	if err != nil {
		return "", fmt.Errorf("envoyconfig: marshal bootstrap for hashing: %w", err)
	}
	sum := sha256.Sum256(wire)
	return hex.EncodeToString(sum[:]), nil
}
