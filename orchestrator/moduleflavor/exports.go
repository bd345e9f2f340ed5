package moduleflavor

import (
	"debug/elf"
	"fmt"
	"slices"
)

// requiredExports are the hooks Envoy's dynamic-module ABI calls to load a
// module and to make an HTTP filter of it: a library without them is not a
// module Envoy can run as an HTTP filter.
var requiredExports = []string{
	"envoy_dynamic_module_on_program_init",
	"envoy_dynamic_module_on_http_filter_config_new",
	"envoy_dynamic_module_on_http_filter_new",
}

// RequiredExports are the ABI hooks CheckExports requires.
func RequiredExports() []string { return slices.Clone(requiredExports) }

// CheckExports reads the library's dynamic symbols and reports the ABI
// hooks it does not define: the quick check, before Envoy loads it, that
// the file is an Envoy dynamic module with an HTTP filter.
func CheckExports(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("not a shared library Envoy can load: %w", err)
	}
	defer f.Close()
	if f.Type != elf.ET_DYN {
		return fmt.Errorf("%s is an ELF %s, not a shared library", path, f.Type)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return fmt.Errorf("%s: reading its dynamic symbols: %w", path, err)
	}
	defined := map[string]bool{}
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			defined[s.Name] = true
		}
	}
	var missing []string
	for _, name := range requiredExports {
		if !defined[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s does not export %v: it is not an Envoy dynamic module with an HTTP filter", path, missing)
	}
	return nil
}
