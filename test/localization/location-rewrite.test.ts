import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLocationRewrite } from '../../src/localization/location-rewrite.js';

describe('Location rewrite for the localization route', () => {
  it('keeps a redirect to an absolute path on Weblate under the route prefix (Django APPEND_SLASH)', () => {
    const rewrite = createLocationRewrite('https://weblate.example.com', '/l10n');
    assert.equal(rewrite('/api/translations/p/c/de/'), '/l10n/api/translations/p/c/de/');
    assert.equal(rewrite('/api/translations/p/c/de/?format=json'), '/l10n/api/translations/p/c/de/?format=json');
    assert.equal(rewrite('/'), '/l10n/');
  });

  it('rewrites an absolute URL on the server\'s origin, keeping the raw path', () => {
    const rewrite = createLocationRewrite('https://weblate.example.com/', '/l10n');
    assert.equal(rewrite('https://weblate.example.com/api/translations/p/docs%252Fusage/de/'), '/l10n/api/translations/p/docs%252Fusage/de/');
    assert.equal(rewrite('HTTPS://Weblate.Example.COM:443/api/x/'), '/l10n/api/x/');
    assert.equal(rewrite('https://weblate.example.com?next=1'), '/l10n/?next=1');
    assert.equal(rewrite('//weblate.example.com/api/x/'), '/l10n/api/x/');
  });

  it('strips the server\'s base path and leaves paths outside it alone', () => {
    const rewrite = createLocationRewrite('https://example.com:8443/weblate/', '/l10n');
    assert.equal(rewrite('/weblate/api/translations/p/c/de/'), '/l10n/api/translations/p/c/de/');
    assert.equal(rewrite('https://example.com:8443/weblate/api/x/'), '/l10n/api/x/');
    assert.equal(rewrite('/weblate'), '/l10n/');
    assert.equal(rewrite('/weblate?x=1'), '/l10n/?x=1');
    assert.equal(rewrite('/weblatex/api/'), '/weblatex/api/');
    assert.equal(rewrite('/accounts/login/'), '/accounts/login/');
  });

  it('resolves dot segments, raw or encoded, so a client cannot be sent from the prefix to the B2B route', () => {
    const rewrite = createLocationRewrite('https://weblate.example.com', '/l10n');
    assert.equal(rewrite('/../pub/b2b/v1/objects/1'), '/l10n/pub/b2b/v1/objects/1');
    assert.equal(rewrite('https://weblate.example.com/api/../../pub/x?y=1'), '/l10n/pub/x?y=1');
    assert.equal(rewrite('/%2e%2e/pub/x'), '/l10n/pub/x');
  });

  it('passes other redirects unchanged: other origins, other schemes or ports, relative references', () => {
    const rewrite = createLocationRewrite('https://weblate.example.com', '/l10n');
    for (const location of [
      'https://evil.example/api/x/', 'http://weblate.example.com/api/x/', 'https://weblate.example.com:8443/api/x/',
      '//evil.example/api/x/', 'de/', '../x', '?page=2', 'mailto:someone@example.com', 'https://weblate.example.com.evil.example/x',
    ]) {
      assert.equal(rewrite(location), location, location);
    }
  });
});
