package abi

/*
#include "glue.h"
*/
import "C"

// Hook statuses as typed Go constants, so the generic helpers of the hooks
// infer the hook's own return type.
type (
	reqHeadersStatus  = C.envoy_dynamic_module_type_on_http_filter_request_headers_status
	respHeadersStatus = C.envoy_dynamic_module_type_on_http_filter_response_headers_status
	reqBodyStatus     = C.envoy_dynamic_module_type_on_http_filter_request_body_status
	respBodyStatus    = C.envoy_dynamic_module_type_on_http_filter_response_body_status
	reqTrailersStatus = C.envoy_dynamic_module_type_on_http_filter_request_trailers_status
	respTrailerStatus = C.envoy_dynamic_module_type_on_http_filter_response_trailers_status
)

const (
	reqHeadersContinue  reqHeadersStatus  = C.HEADERS_CONTINUE
	reqHeadersStop      reqHeadersStatus  = C.HEADERS_STOP_ITERATION
	respHeadersContinue respHeadersStatus = C.HEADERS_CONTINUE
	respHeadersStop     respHeadersStatus = C.HEADERS_STOP_ITERATION

	reqBodyContinue reqBodyStatus = C.BODY_CONTINUE
	reqBodyBuffer   reqBodyStatus = C.BODY_STOP_AND_BUFFER
	reqBodyStop     reqBodyStatus = C.BODY_STOP_NO_BUFFER
	// reqBodyWatermark holds frames while an inspection runs off the worker:
	// past the buffer limit Envoy stops reading from the client instead of
	// answering 413, which the rest of a ProcessPartial body would cause.
	reqBodyWatermark reqBodyStatus  = C.BODY_STOP_AND_WATERMARK
	respBodyContinue respBodyStatus = C.BODY_CONTINUE
	respBodyBuffer   respBodyStatus = C.BODY_STOP_AND_BUFFER
	respBodyStop     respBodyStatus = C.BODY_STOP_NO_BUFFER

	reqTrailersContinue  reqTrailersStatus = C.TRAILERS_CONTINUE
	reqTrailersStop      reqTrailersStatus = C.TRAILERS_STOP_ITERATION
	respTrailersContinue respTrailerStatus = C.TRAILERS_CONTINUE
	respTrailersStop     respTrailerStatus = C.TRAILERS_STOP_ITERATION
)
