package envoyconfig

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	dynamicmodulesv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/dynamic_modules/v3"
	dmfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/dynamic_modules/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// moduleConfig names the module by file, so Envoy needs no search path.
func moduleConfig(w WAFFilter) *dynamicmodulesv3.DynamicModuleConfig {
	return &dynamicmodulesv3.DynamicModuleConfig{
		// Envoy finds the file by module, not by name; kept so the config
		// reads the same as one that relies on
		// ENVOY_DYNAMIC_MODULES_SEARCH_PATH.
		Name: w.ModuleName,
		Module: &corev3.AsyncDataSource{Specifier: &corev3.AsyncDataSource_Local{
			Local: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: w.ModulePath}},
		}},
		// A Go runtime cannot be unloaded: dlclose would crash Envoy.
		DoNotClose:       true,
		MetricsNamespace: w.MetricsNamespace,
	}
}

// stringConfig wraps JSON as a StringValue, which Envoy hands to the module
// unwrapped.
func stringConfig(json string) (*anypb.Any, error) {
	return toAny(wrapperspb.String(json))
}

// structConfig wraps JSON as a google.protobuf.Struct, which Envoy hands to
// the module re-serialized as JSON: the form YAML users write by hand.
func structConfig(json string) (*anypb.Any, error) {
	var st structpb.Struct
	if err := protojson.Unmarshal([]byte(json), &st); err != nil {
		return nil, fmt.Errorf("filter config is not a JSON object: %w", err)
	}
	return toAny(&st)
}

func filterConfigAny(w WAFFilter) (*anypb.Any, error) {
	if w.ConfigAsStruct {
		return structConfig(w.ConfigJSON)
	}
	return stringConfig(w.ConfigJSON)
}

func buildWAFHTTPFilter(w WAFFilter) (*hcmv3.HttpFilter, error) {
	filterConfig, err := filterConfigAny(w)
	if err != nil {
		return nil, fmt.Errorf("envoyconfig: wrap WAF config: %w", err)
	}
	typed, err := toAny(&dmfilterv3.DynamicModuleFilter{
		DynamicModuleConfig: moduleConfig(w),
		FilterName:          w.FilterName,
		FilterConfig:        filterConfig,
	})
	if err != nil {
		return nil, fmt.Errorf("envoyconfig: wrap WAF filter: %w", err)
	}
	return &hcmv3.HttpFilter{
		Name:       HTTPFilterName,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed},
	}, nil
}

func buildWAFPerRoute(w WAFFilter, json string) (*anypb.Any, error) {
	filterConfig, err := stringConfig(json)
	if err != nil {
		return nil, fmt.Errorf("wrap per-route WAF config: %w", err)
	}
	typed, err := toAny(&dmfilterv3.DynamicModuleFilterPerRoute{
		DynamicModuleConfig: moduleConfig(w),
		FilterName:          w.FilterName,
		FilterConfig:        filterConfig,
	})
	if err != nil {
		return nil, fmt.Errorf("wrap per-route WAF filter: %w", err)
	}
	return typed, nil
}
