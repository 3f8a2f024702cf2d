# Sourced by the scripts: installs what a fresh Debian 12 machine lacks for building and testing
# Reins (Rust itself comes from rustup). Each step checks first, so a second run does nothing.

# rustup installs cargo here; a non-login shell (CI) may not have it on PATH.
if [ -d "$HOME/.cargo/bin" ]; then PATH="$HOME/.cargo/bin:$PATH"; fi
sudo=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then sudo="sudo"; fi

apt_install() {
  if [ $# -gt 0 ]; then
    echo "installing Debian packages: $*"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@"
  fi
}

have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# The desktop app's build needs WebKitGTK and friends; its tests need a display (Xvfb), the
# WebDriver for WebKitGTK, xdotool for native dialogs, and a session bus.
deps_build() {
  local missing=()
  command -v cc >/dev/null || missing+=(build-essential)
  command -v pkg-config >/dev/null || missing+=(pkg-config)
  command -v file >/dev/null || missing+=(file)
  for p in libwebkit2gtk-4.1-dev libgtk-3-dev libayatana-appindicator3-dev librsvg2-dev libsoup-3.0-dev libssl-dev libdbus-1-dev; do
    have_pkg "$p" || missing+=("$p")
  done
  command -v npm >/dev/null || missing+=(nodejs npm)
  apt_install "${missing[@]}"
  if ! command -v cargo >/dev/null; then
    echo "cargo not found; install Rust with rustup (https://rustup.rs) and run again" >&2
    exit 2
  fi
}

deps_test() {
  local missing=()
  command -v mkfifo >/dev/null || missing+=(coreutils)
  command -v dbus-run-session >/dev/null || missing+=(dbus)
  command -v gnome-keyring-daemon >/dev/null || missing+=(gnome-keyring)
  command -v secret-tool >/dev/null || missing+=(libsecret-tools)
  command -v WebKitWebDriver >/dev/null || missing+=(webkit2gtk-driver)
  command -v xvfb-run >/dev/null || missing+=(xvfb)
  command -v xauth >/dev/null || missing+=(xauth)
  command -v xdotool >/dev/null || missing+=(xdotool)
  # A real notification server for deciding from a notification (its dunstctl picks the buttons).
  command -v dunst >/dev/null || missing+=(dunst)
  # The web face (`reins serve`) in a real browser, and requests made as a person would make them.
  command -v chromium >/dev/null || missing+=(chromium)
  command -v chromedriver >/dev/null || missing+=(chromium-driver)
  command -v curl >/dev/null || missing+=(curl)
  # Team mode: the store and story suites also run on a throwaway PostgreSQL 15 cluster
  # (crates/reins-testpg starts it with initdb and pg_ctl, as the postgres user).
  [ -x /usr/lib/postgresql/15/bin/initdb ] || missing+=(postgresql-15)
  command -v runuser >/dev/null || missing+=(util-linux)
  command -v setsid >/dev/null || missing+=(util-linux)
  # The containment escape suite: probes for sockets and ptrace, run as root and as `nobody`.
  [ -x /usr/bin/python3 ] || missing+=(python3)
  command -v setpriv >/dev/null || missing+=(util-linux)
  # The OpenTelemetry tests' trace receiver (Arize Phoenix) lives in a virtualenv.
  python3 -c 'import ensurepip' 2>/dev/null || missing+=(python3-venv)
  command -v unshare >/dev/null || missing+=(util-linux)
  # One durable commit per file step is counted in the log syncs `reins` makes.
  command -v strace >/dev/null || missing+=(strace)
  apt_install "${missing[@]}"
  command -v tauri-driver >/dev/null || cargo install tauri-driver --locked --version ^2
}

# The UI: node modules from the lock file, then the built assets the app embeds.
ui_build() {
  if [ ! -d ui/node_modules ] || [ ui/package-lock.json -nt ui/node_modules/.package-lock.json ]; then
    npm ci --prefix ui --no-audit --no-fund
  fi
  npm --prefix ui run build
}
