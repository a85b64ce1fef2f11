// The systemd unit as the release's artifacts carry it: deploy/systemd/b2b-sidecar.service with the
// comment block above [Unit] (written for an npm install) replaced by one for that install, its
// ExecStart program and its Documentation= set. The rest, comments included, is the repository's.

/** The .deb: /usr/lib/systemd/system/b2b-sidecar.service, the launcher's symlink in /usr/bin. */
export const DEB_UNIT = {
  program: '/usr/bin/b2b-sidecar',
  // No man:b2b-sidecar(1) here, though the package installs it: `systemd-analyze verify` runs `man`
  // for such a URI and fails the unit where man-db is not installed (minimal and container hosts).
  documentation: 'file:/usr/share/doc/b2b-sidecar/docs/install.md file:/usr/share/doc/b2b-sidecar/docs/runbook.md',
  header: [
    '# b2b-sidecar as the Debian package installs it (/usr/lib/systemd/system/b2b-sidecar.service;',
    '# an upgrade replaces this file: change settings with `systemctl edit b2b-sidecar`, a drop-in).',
    '#',
    '# The package installs the unit without enabling or starting it. Fill in',
    '# /etc/b2b-sidecar/sidecar.yaml (0640, group b2b-sidecar: the service reads it, other users',
    '# cannot), /etc/b2b-sidecar/api-key and /etc/b2b-sidecar/password (root-only, 0600; they reach the',
    '# service only through LoadCredential=), then (as root):',
    '#   systemctl enable --now b2b-sidecar',
    '#   journalctl -u b2b-sidecar -f                     # JSON log lines',
    '# The service runs as the system user b2b-sidecar the package made (DynamicUser= takes a static',
    '# user of the unit\'s name when one exists). man b2b-sidecar; /usr/share/doc/b2b-sidecar/docs/install.md.',
  ],
};

/** The Linux archives: unpacked in /opt as docs/install.md says, the unit copied to /etc/systemd/system. */
export const ARCHIVE_UNIT = {
  program: '/opt/b2b-sidecar/bin/b2b-sidecar',
  documentation: 'file:/opt/b2b-sidecar/docs/install.md file:/opt/b2b-sidecar/docs/runbook.md',
  header: [
    '# b2b-sidecar from the release\'s Linux archive, unpacked as docs/install.md says: the folder',
    '# /opt/b2b-sidecar (a symlink to b2b-sidecar-<version>), the launcher bin/b2b-sidecar in it.',
    '#',
    '# Install (as root):',
    '#   install -D -m 0644 /opt/b2b-sidecar/config/sidecar.example.yaml /etc/b2b-sidecar/sidecar.yaml   # then edit baseUrl',
    '#   install -m 0600 /dev/null /etc/b2b-sidecar/api-key  && $EDITOR /etc/b2b-sidecar/api-key',
    '#   install -m 0600 /dev/null /etc/b2b-sidecar/password && $EDITOR /etc/b2b-sidecar/password',
    '#   install -m 0644 /opt/b2b-sidecar/deploy/systemd/b2b-sidecar.service /etc/systemd/system/',
    '#   systemctl daemon-reload && systemctl enable --now b2b-sidecar',
    '#   journalctl -u b2b-sidecar -f                     # JSON log lines',
    '# Unpacked elsewhere: change ExecStart (`systemctl edit b2b-sidecar`: an empty ExecStart= line',
    '# first, then the new one), outside /home, /root and /run/user (ProtectHome=yes hides them).',
    '# The config file holds no secrets; the credential files stay root-only (0600) and reach the',
    '# service only through LoadCredential=.',
  ],
};

/** The repository's unit text made into one of the above; throws when a line it sets is missing. */
export function packagedUnit(text, { program, documentation, header }) {
  const start = text.indexOf('\n[Unit]\n');
  if (start < 0) throw new Error('the unit has no [Unit] section');
  let body = text.slice(start + 1);
  const set = (pattern, replacement, what) => {
    if (!pattern.test(body)) throw new Error(`the unit has no ${what} line`);
    body = body.replace(pattern, replacement);
  };
  set(/^ExecStart=\S+ /m, `ExecStart=${program} `, 'ExecStart=');
  set(/^Documentation=.*$/m, `Documentation=${documentation}`, 'Documentation=');
  // The systemd-run doctor line in the comments names the program too.
  body = body.replaceAll('/usr/bin/b2b-sidecar ', `${program} `);
  return `${header.join('\n')}\n\n${body}`;
}
