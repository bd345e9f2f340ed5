package nginxconfig

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Environment variables that override where Find looks.
const (
	BinaryEnvVar = "NGINX_BIN"
	ModuleEnvVar = "NGINX_MODSECURITY_MODULE"
)

// DebianModulePath is where Debian's libnginx-mod-http-modsecurity installs
// the connector (`dpkg -L libnginx-mod-http-modsecurity`).
const DebianModulePath = "/usr/lib/nginx/modules/ngx_http_modsecurity_module.so"

// InstallHint is the fix named when nginx or the module is missing.
const InstallHint = "run `make nginx-peer` (or `apt-get install nginx libnginx-mod-http-modsecurity`)"

// Installation is the nginx binary and ModSecurity connector a sweep uses.
type Installation struct {
	Binary string
	Module string
}

// Find locates nginx ($NGINX_BIN, else nginx on PATH, else /usr/sbin/nginx,
// which root's PATH has and other users' often not) and the connector
// ($NGINX_MODSECURITY_MODULE, else Debian's path), and checks them.
func Find() (Installation, error) {
	inst := Installation{Binary: os.Getenv(BinaryEnvVar), Module: os.Getenv(ModuleEnvVar)}
	if inst.Binary == "" {
		inst.Binary = "/usr/sbin/nginx"
		if p, err := exec.LookPath("nginx"); err == nil {
			inst.Binary = p
		}
	}
	if inst.Module == "" {
		inst.Module = DebianModulePath
	}
	return inst, inst.Check()
}

// Check reports a missing binary or module, naming every missing piece
// and the fix.
func (i Installation) Check() error {
	var errs []error
	if err := checkFile(i.Binary, true); err != nil {
		errs = append(errs, fmt.Errorf("no nginx binary: %w", err))
	}
	if err := checkFile(i.Module, false); err != nil {
		errs = append(errs, fmt.Errorf("no ModSecurity connector for nginx: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("nginx-modsecurity needs nginx and libnginx-mod-http-modsecurity (%w); %s", err, InstallHint)
	}
	return nil
}

func checkFile(path string, executable bool) error {
	if path == "" {
		return errors.New("no path given")
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if info.IsDir() || executable && info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// ModSecurityVersion is the installed libmodsecurity3 package's version,
// e.g. "3.0.9-1+deb12u2", or "unknown" off Debian.
func ModSecurityVersion() string {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "libmodsecurity3").Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return v
	}
	return "unknown"
}

// Version is `nginx -v`'s version, e.g. "nginx/1.22.1".
func (i Installation) Version() string {
	out, err := exec.Command(i.Binary, "-v").CombinedOutput()
	if v, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "nginx version: "); err == nil && ok {
		return v
	}
	return "unknown"
}

// validateTimeout bounds `nginx -t`: parsing full CRS takes well under a
// second.
const validateTimeout = 30 * time.Second

// Validate runs `nginx -t` on the configuration at confPath, which also
// makes ModSecurity parse every rule file. Its error quotes nginx's
// message. errorLog receives what nginx logs before it has read the
// configuration, instead of the system's /var/log/nginx.
func (i Installation) Validate(ctx context.Context, confPath, errorLog string) error {
	ctx, cancel := context.WithTimeout(ctx, validateTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, i.Binary, ValidateArgs(confPath, errorLog)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("nginxconfig: %s rejects %s: %w:\n%s", i.Binary, confPath, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ValidateArgs is the `nginx -t` command line.
func ValidateArgs(confPath, errorLog string) []string {
	return append([]string{"-t", "-q"}, RunArgs(confPath, errorLog)...)
}

// RunArgs is the command line that runs the configuration: -p points
// nginx's prefix at the configuration's directory and -e its early error
// log into it, so nothing outside the run directory is touched.
func RunArgs(confPath, errorLog string) []string {
	return []string{"-p", filepath.Dir(confPath) + "/", "-c", confPath, "-e", errorLog}
}
