/**
 * The Redis store's Lua scripts (redis-store.ts). A script runs atomically on the server, so each
 * compare-and-set below is one step no peer can interleave with (docs/fleet.md, "Redis"). The
 * record is the JSON of serializeRecord() (fleet-record.ts), its version inside; a stored value
 * that is not such a record counts as no record (version 0), as read() treats it.
 */

/** The stored version of the record JSON in `cur` (false when absent), 0 when there is none or it is unreadable. */
const STORED_VERSION = `
local function stored_version(cur)
  if not cur then return 0 end
  local ok, rec = pcall(cjson.decode, cur)
  if not ok or type(rec) ~= 'table' or type(rec.version) ~= 'number' then return 0 end
  return rec.version
end
`;

/**
 * Extends the claim for its holder, or takes it when it lapsed between the caller's `SET NX` and
 * this script. KEYS[1] claim key; ARGV holder, ttl ms. 1 when the holder holds it now.
 */
export const EXTEND_CLAIM = `
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
if not cur then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0
`;

/** Deletes the claim only while `holder` holds it. KEYS[1] claim key; ARGV holder. */
export const RELEASE_CLAIM = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/**
 * Stores the record only while the stored version is the expected one, and announces it.
 * KEYS[1] record key; ARGV expected version, the new record's JSON (version expected+1 inside),
 * its time to live in ms, the change channel. {1, version} when stored; {0, current JSON or false}.
 */
export const PUBLISH_RECORD = `${STORED_VERSION}
local cur = redis.call('GET', KEYS[1])
local expected = tonumber(ARGV[1])
if stored_version(cur) ~= expected then return {0, cur} end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('PUBLISH', ARGV[4], expected + 1)
return {1, expected + 1}
`;

/**
 * Marks the record invalid only while its version is the one named, keeping its time to live, and
 * announces it. The JSON is extended as text rather than re-encoded: Lua's cjson would round
 * numbers to 14 significant digits and escape the token's slashes. KEYS[1] record key; ARGV version, channel.
 * 1 when the named version is stored (now marked), 0 when a peer's record replaced it.
 */
export const INVALIDATE_RECORD = `${STORED_VERSION}
local cur = redis.call('GET', KEYS[1])
if not cur or stored_version(cur) ~= tonumber(ARGV[1]) then return 0 end
local rec = cjson.decode(cur)
if rec.invalid == true then return 1 end
redis.call('SET', KEYS[1], string.sub(cur, 1, -2) .. ',"invalid":true}', 'KEEPTTL')
redis.call('PUBLISH', ARGV[2], ARGV[1])
return 1
`;
