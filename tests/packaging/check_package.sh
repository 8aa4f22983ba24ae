#!/usr/bin/env bash
# The shipped artefacts, as a user gets them: a build with tests off, `cmake --install`
# into a temporary prefix and the installed binary run from there, the .deb's
# dependencies, and the .deb installed with apt and its unit checked by
# systemd-analyze verify. The package is purged again at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "check_package: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "needs root (apt-get install of the .deb)"

deb=$(bash scripts/package.sh | tail -n 1)
[ -f "$deb" ] || fail "no .deb built"
dir=$(dirname "$deb")
prefix=$(mktemp -d /tmp/netbox-prefix-XXXXXX)

# 1. cmake --install into a prefix; the installed files are where the docs say.
trap 'rm -rf "$prefix"' EXIT
cmake --install "$dir" --prefix "$prefix" >/dev/null
for f in bin/netbox share/man/man1/netbox.1 share/bash-completion/completions/netbox \
         share/zsh/vendor-completions/_netbox lib/systemd/system/netbox-proxy.service \
         etc/netbox/policy.json etc/netbox/proxy.json share/netbox/proxy.json share/netbox/netbox-policy.schema.json share/netbox/examples/agent-policy.json \
         share/netbox/grafana/netbox.json share/netbox/prometheus/netbox-alerts.yml share/netbox/policy.json share/doc/netbox/copyright share/doc/netbox/docs/architecture.md; do
  [ -e "$prefix/$f" ] || fail "cmake --install did not install $f"
done
"$prefix/bin/netbox" --version | grep -q '^netbox ' || fail "the installed binary does not run"
"$prefix/bin/netbox" policy check "$prefix/etc/netbox/policy.json" >/dev/null || fail "the installed policy does not load"
"$prefix/bin/netbox" policy check "$prefix/share/netbox/examples/agent-policy.json" >/dev/null ||
  fail "an installed example policy does not load"
grep -q "ExecStart=$prefix/bin/netbox proxy --config $prefix/etc/netbox/proxy.json" \
  "$prefix/lib/systemd/system/netbox-proxy.service" || fail "the unit does not name the installed binary and config"
grep -q "\"policy\": \"$prefix/etc/netbox/policy.json\"" "$prefix/etc/netbox/proxy.json" ||
  fail "the installed config does not name the installed policy"
# The installed config is one the proxy takes: it starts on it (another port, a store here).
chmod 0644 "$prefix/etc/netbox/proxy.json"
mkdir -m 0700 "$prefix/state"
timeout -s TERM 3 "$prefix/bin/netbox" proxy --config "$prefix/etc/netbox/proxy.json" --listen 127.0.0.1:0 \
  --audit-db "$prefix/state/audit.db" --control "$prefix/state/proxy.sock" 2>"$prefix/state/log" ||
  [ $? = 124 ] || fail "the proxy does not start on the installed config: $(cat "$prefix/state/log")"
grep -q "starting .*config=$prefix/etc/netbox/proxy.json" "$prefix/state/log" ||
  fail "the proxy did not read the installed config: $(cat "$prefix/state/log")"
# The completion reads flags from the installed binary.
out=$(PATH="$prefix/bin:$PATH" bash -c 'source "$1"; COMP_WORDS=(netbox launch --pol); COMP_CWORD=2; _netbox; echo "${COMPREPLY[*]}"' _ \
  "$prefix/share/bash-completion/completions/netbox")
[ "$out" = "--policy" ] || fail "bash completion of 'netbox launch --pol' gave '$out'"

# 2. The .deb depends on Debian's runtime libraries, never on -dev packages.
info=$(dpkg-deb -I "$deb")
depends=$(echo "$info" | sed -n 's/^ Depends: //p')
for lib in libc6 libsqlite3-0 libseccomp2 libnftnl11 libssl3 libc-ares2 libidn2-0 libmnl0 libcap2 adduser; do
  echo "$depends" | grep -q "$lib" || fail "Depends lacks $lib: $depends"
done
! echo "$depends" | grep -q -- '-dev' || fail "Depends names a -dev package: $depends"
outside=$(dpkg-deb -c "$deb" | grep -vE ' \./(usr/|etc/netbox/(policy|proxy)\.json$|etc/(netbox/)?$)' || true)
[ -z "$outside" ] || fail "the .deb installs outside /usr and its two conffiles: $outside"
echo "$info" | grep -q '^ Recommends: .*ca-certificates' || fail "Recommends lacks ca-certificates: $info"
# libpq is loaded only for a postgresql:// store (audit/libpq/libpq.cpp): recommended, not
# linked, so neither the binary nor Depends names it.
echo "$info" | grep -q '^ Recommends: .*libpq5' || fail "Recommends lacks libpq5: $info"
! echo "$depends" | grep -q libpq || fail "Depends names libpq, which netbox loads only for postgresql://: $depends"
! objdump -p "$prefix/bin/netbox" | grep -q 'NEEDED.*libpq' || fail "the installed binary links libpq"
[ "$(dpkg-deb -f "$deb" Package)" = netbox ] || fail "the package is not named netbox"
conffiles=$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)
[ "$conffiles" = "$(printf '/etc/netbox/policy.json\n/etc/netbox/proxy.json')" ] ||
  fail "the conffiles are not the policy and the config: $conffiles"
# Debian's layout: the changelog as changelog.gz, docs and the man page compressed (gzip -n:
# no time stamp), the copyright file and the screenshot as they are.
contents=$(dpkg-deb -c "$deb")
for f in usr/share/doc/netbox/changelog.gz usr/share/doc/netbox/docs/architecture.md.gz \
         usr/share/doc/netbox/docs/dashboard.png usr/share/doc/netbox/copyright usr/share/man/man1/netbox.1.gz; do
  echo "$contents" | grep -q " \./$f\$" || fail "the .deb lacks $f"
done
! echo "$contents" | grep -qE '/usr/share/(doc/netbox|man)/.*\.md$' || fail "the .deb ships an uncompressed doc"

# 3. Installed with apt as a user would; the unit passes systemd-analyze verify.
was_installed=0
had_state=0; [ -e /var/lib/netbox ] && had_state=1
had_group=0; getent group netbox >/dev/null && had_group=1
dpkg-query -W -f='${Status}' netbox 2>/dev/null | grep -q "install ok installed" && was_installed=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >/dev/null || fail "apt-get install $deb"
/usr/bin/netbox --version | grep -q '^netbox ' || fail "/usr/bin/netbox does not run"
getent group netbox >/dev/null || fail "postinst made no netbox group"
[ "$(stat -c '%a %U %G' /var/lib/netbox)" = "750 root netbox" ] || fail "/var/lib/netbox is $(stat -c '%a %U %G' /var/lib/netbox)"
for f in policy.json proxy.json; do
  [ "$(stat -c '%a %U %G' /etc/netbox/$f)" = "640 root netbox" ] ||
    fail "/etc/netbox/$f is $(stat -c '%a %U %G' /etc/netbox/$f)"
  dpkg-query -W -f='${Conffiles}\n' netbox | grep -q "/etc/netbox/$f " || fail "dpkg does not keep /etc/netbox/$f as a conffile"
done
# An administrator's edit survives a reinstall (as it does an upgrade): dpkg keeps a changed conffile.
if [ "$was_installed" = 0 ]; then
  printf '{"version": 1, "mode": "enforce", "allow": ["kept.example"]}\n' > /etc/netbox/policy.json
  /usr/bin/netbox policy check /etc/netbox/policy.json >/dev/null || fail "the edited policy does not load"
  DEBIAN_FRONTEND=noninteractive apt-get install --reinstall -y -qq "$deb" >/dev/null || fail "apt-get install --reinstall $deb"
  grep -q kept.example /etc/netbox/policy.json || fail "a reinstall replaced the administrator's /etc/netbox/policy.json"
  [ "$(stat -c '%a %U %G' /etc/netbox/policy.json)" = "640 root netbox" ] ||
    fail "after a reinstall /etc/netbox/policy.json is $(stat -c '%a %U %G' /etc/netbox/policy.json)"
fi
zcat /usr/share/doc/netbox/changelog.gz | grep -q '^# ' || fail "/usr/share/doc/netbox/changelog.gz is not the changelog"
state=$(mktemp -d /tmp/netbox-state-XXXXXX)
timeout -s TERM 3 /usr/bin/netbox proxy --listen 127.0.0.1:0 --audit-db "$state/audit.db" --control "$state/proxy.sock" \
  2>"$state/log" || [ $? = 124 ] || fail "the proxy does not start on /etc/netbox/proxy.json: $(cat "$state/log")"
grep -q "starting .*config=/etc/netbox/proxy.json" "$state/log" ||
  fail "the proxy did not read /etc/netbox/proxy.json by default: $(cat "$state/log")"
rm -rf "$state"
unit=/lib/systemd/system/netbox-proxy.service
[ -f "$unit" ] || unit=/usr/lib/systemd/system/netbox-proxy.service
verify=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify is not clean: $verify"
man -w netbox >/dev/null 2>&1 || fail "man netbox finds no page"
if [ "$was_installed" = 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq netbox >/dev/null || fail "apt-get purge netbox"
  [ ! -e /usr/bin/netbox ] || fail "/usr/bin/netbox is left after purge"
  [ ! -e /etc/netbox ] || fail "/etc/netbox is left after purge"
  # The store is kept on purge by design; what this test made, it takes away itself.
  [ "$had_state" = 1 ] || rmdir /var/lib/netbox
  [ "$had_group" = 1 ] || delgroup --system netbox >/dev/null
fi
echo "check_package: ok ($(basename "$deb"))"
