package envoyconfig

import (
	"fmt"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filelogv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// AccessLogEntry is one line of the access log written when
// Options.AccessLogPath is set. Envoy renders typed JSON, so numbers arrive
// as numbers and absent values as null.
type AccessLogEntry struct {
	StartTime           string `json:"start_time"`
	Method              string `json:"method"`
	Path                string `json:"path"`
	Authority           string `json:"authority"`
	Protocol            string `json:"protocol"`
	ResponseCode        int    `json:"response_code"`
	ResponseFlags       string `json:"response_flags"`
	ResponseCodeDetails string `json:"response_code_details"`
	BytesReceived       int64  `json:"bytes_received"`
	BytesSent           int64  `json:"bytes_sent"`
	DurationMs          int64  `json:"duration_ms"`
	UpstreamHost        string `json:"upstream_host"`
	RequestID           string `json:"request_id"`
	// WAF is the module's dynamic metadata (namespace
	// DynamicMetadataNamespace) as a JSON object, or null.
	WAF map[string]any `json:"waf"`
}

// accessLogFormat maps AccessLogEntry's JSON keys to Envoy command operators.
var accessLogFormat = map[string]any{
	"start_time":            "%START_TIME%",
	"method":                "%REQ(:METHOD)%",
	"path":                  "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%",
	"authority":             "%REQ(:AUTHORITY)%",
	"protocol":              "%PROTOCOL%",
	"response_code":         "%RESPONSE_CODE%",
	"response_flags":        "%RESPONSE_FLAGS%",
	"response_code_details": "%RESPONSE_CODE_DETAILS%",
	"bytes_received":        "%BYTES_RECEIVED%",
	"bytes_sent":            "%BYTES_SENT%",
	"duration_ms":           "%DURATION%",
	"upstream_host":         "%UPSTREAM_HOST%",
	"request_id":            "%REQ(X-REQUEST-ID)%",
	"waf":                   "%DYNAMIC_METADATA(" + DynamicMetadataNamespace + ")%",
}

func buildAccessLog(path string) (*accesslogv3.AccessLog, error) {
	format, err := structpb.NewStruct(accessLogFormat)
	if err != nil {
		return nil, fmt.Errorf("envoyconfig: access log format: %w", err)
	}
	typed, err := toAny(&filelogv3.FileAccessLog{
		Path: path,
		AccessLogFormat: &filelogv3.FileAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
			Format: &corev3.SubstitutionFormatString_JsonFormat{JsonFormat: format},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("envoyconfig: wrap file access log: %w", err)
	}
	return &accesslogv3.AccessLog{
		Name:       "envoy.access_loggers.file",
		ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: typed},
	}, nil
}
