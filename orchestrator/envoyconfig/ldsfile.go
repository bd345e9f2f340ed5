package envoyconfig

import (
	"fmt"
	"os"
	"path/filepath"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

// listenerTypeURL is the xDS type of the resources in an LDS file.
const listenerTypeURL = "type.googleapis.com/envoy.config.listener.v3.Listener"

// MarshalListeners renders listeners as the DiscoveryResponse JSON that
// file-based LDS reads. version is the response's version_info, which Envoy
// logs and reports in /config_dump; it does not need to increase.
func MarshalListeners(version string, listeners ...*listenerv3.Listener) ([]byte, error) {
	resp := &discoveryv3.DiscoveryResponse{VersionInfo: version, TypeUrl: listenerTypeURL}
	for _, l := range listeners {
		resource, err := toAny(l)
		if err != nil {
			return nil, fmt.Errorf("envoyconfig: wrap listener %q: %w", l.GetName(), err)
		}
		resp.Resources = append(resp.Resources, resource)
	}
	out, err := protojson.MarshalOptions{UseProtoNames: true, Multiline: true, Indent: "  "}.Marshal(resp)
	if err != nil {
		return nil, fmt.Errorf("envoyconfig: marshal LDS response: %w", err)
	}
	return append(out, '\n'), nil
}

// UnmarshalListeners is the inverse of MarshalListeners, for tests and
// tools that read an LDS file back.
func UnmarshalListeners(data []byte) (version string, listeners []*listenerv3.Listener, err error) {
	resp := &discoveryv3.DiscoveryResponse{}
	if err := protojson.Unmarshal(data, resp); err != nil {
		return "", nil, fmt.Errorf("envoyconfig: decode LDS response: %w", err)
	}
	for i, resource := range resp.GetResources() {
		l := &listenerv3.Listener{}
		if err := resource.UnmarshalTo(l); err != nil {
			return "", nil, fmt.Errorf("envoyconfig: LDS resource %d: %w", i, err)
		}
		listeners = append(listeners, l)
	}
	return resp.GetVersionInfo(), listeners, nil
}

// WriteListenersFile replaces path with an LDS response holding listeners
// (see MarshalListeners). It writes a temporary file in the same directory
// and renames it into place: Envoy, watching that directory (BuildDynamic),
// reloads on the rename and never reads a half-written file. The temporary
// name does not end in .json, so Envoy never mistakes it for the real one.
func WriteListenersFile(path, version string, listeners ...*listenerv3.Listener) (err error) {
	data, err := MarshalListeners(version, listeners...)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("envoyconfig: write LDS file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("envoyconfig: write LDS file %s: %w", tmp.Name(), err)
	}
	// CreateTemp makes the file private; Envoy may run as another user.
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("envoyconfig: write LDS file %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("envoyconfig: close LDS file %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("envoyconfig: rename LDS file into %s: %w", path, err)
	}
	return nil
}
