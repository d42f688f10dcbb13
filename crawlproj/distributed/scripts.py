"""The Lua scripts of the Redis frontier. Each runs atomically inside Redis.

Keys, under the prefix ``P`` (``REDIS_PREFIX``):

* ``P:q:<key>:<level>``   list: one politeness key's queue at one priority level, items ``fp entry``: the
  URL's 8-byte fingerprint, then the entry (:mod:`.entries`: lean, or a pickle)
* ``P:ready:<part>``      sorted set: the keys of partition ``part`` waiting, scored by when due (ms)
* ``P:lease``             sorted set: keys in flight, scored by lease expiry (ms);
  ``P:lease_owner``       hash key -> ``worker<TAB>part``
* ``P:na:<key>``          when ``key`` may go again (ms), kept until then (PX)
* ``P:pending:<worker>``  hash fp -> ``key<TAB>level<TAB>part<TAB>entry``: handed to a worker, not yet stored
* ``P:group`` hash key -> its server's address, ``P:groupflight:<address>`` keys in flight there
  (the per-IP cap, across workers)
* ``P:queued``, ``P:inflight``  counters; ``P:workers`` sorted set worker -> heartbeat expiry;
  ``P:owner:<part>`` the worker leasing partition ``part`` (PX)
"""

# ARGV: prefix, part, key, level, item, now_ms, worker[, bloom_key, offset...]
# With a Bloom key, the URL is marked seen here, with its push: a worker killed between its
# URL-seen test and the push must not leave a URL marked seen and never queued.
PUSH = """
local p, key = ARGV[1], ARGV[3]
if #ARGV > 8 then
  local get, set = {ARGV[8]}, {ARGV[8]}
  for i = 9, #ARGV do
    get[#get + 1] = 'GET'; get[#get + 1] = 'u1'; get[#get + 1] = ARGV[i]
    set[#set + 1] = 'SET'; set[#set + 1] = 'u1'; set[#set + 1] = ARGV[i]; set[#set + 1] = 1
  end
  local bits = redis.call('BITFIELD', unpack(get))
  local seen = true
  for _, b in ipairs(bits) do if b == 0 then seen = false; break end end
  if seen then return 0 end
  redis.call('BITFIELD', unpack(set))
end
redis.call('RPUSH', p..':q:'..key..':'..ARGV[4], ARGV[5])
redis.call('INCR', p..':queued')
-- An entry this worker holds, sent back (a retry, a render, a robots.txt visit first): the
-- queue holds it again, so its pending record goes; whichever worker takes it records it anew.
local fp = string.sub(ARGV[5], 1, 8)
if redis.call('HDEL', p..':pending:'..ARGV[7], fp) == 1 then redis.call('DECR', p..':inflight') end
if not redis.call('ZSCORE', p..':lease', key) then
  local now = tonumber(ARGV[6])
  local na = tonumber(redis.call('GET', p..':na:'..key) or now)
  redis.call('ZADD', p..':ready:'..ARGV[2], 'NX', math.max(na, now), key)
end
return 1
"""

# ARGV: prefix, now_ms, max, worker, lease_ms, levels, group_cap, retry_ms, group_gap_ms, part...
# Returns {key1, fp1, entry1, key2, ...}, and the earliest due time left in these partitions.
# With a group cap, a key whose server (P:group) already has that many keys in flight, from
# any worker, waits retry_ms and is looked at again. With a group gap (PER_IP_RATE), a key
# whose server had a key handed out less than group_gap_ms ago (P:groupnext:<address>, from
# any worker) waits until then.
POP = """
local p, now, max, me = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local ttl, levels, cap, retry = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local gap = tonumber(ARGV[9])
local out, nextdue = {}, false
for i = 10, #ARGV do
  local rk = p..':ready:'..ARGV[i]
  -- the earliest keys with their due times, in one command: the due ones are taken, the
  -- first one not due tells when to look again
  local first = redis.call('ZRANGE', rk, 0, math.max(0, max - #out / 3), 'WITHSCORES')
  for j = 1, #first, 2 do
    local key, score = first[j], tonumber(first[j + 1])
    if score > now or #out >= 3 * max then
      if not nextdue or score < nextdue then nextdue = score end
      break
    end
    local group = (cap > 0 or gap > 0) and redis.call('HGET', p..':group', key)
    local later = false
    if group and cap > 0 and tonumber(redis.call('GET', p..':groupflight:'..group) or 0) >= cap then
      later = now + retry
    elseif group and gap > 0 then
      local slot = tonumber(redis.call('GET', p..':groupnext:'..group) or 0)
      if slot > now then later = slot end
    end
    if later then
      redis.call('ZADD', rk, later, key)
      if not nextdue or later < nextdue then nextdue = later end
    else
      redis.call('ZREM', rk, key)
      local item, level = false, 0
      for l = 0, levels - 1 do
        item = redis.call('LPOP', p..':q:'..key..':'..l)
        if item then level = l; break end
      end
      if item then
        if group and cap > 0 then redis.call('INCR', p..':groupflight:'..group) end
        if group and gap > 0 then redis.call('SET', p..':groupnext:'..group, now + gap, 'PX', math.ceil(gap) + 1000) end
        redis.call('ZADD', p..':lease', now + ttl, key)
        redis.call('HSET', p..':lease_owner', key, me..'\\t'..ARGV[i])
        local fp, entry = string.sub(item, 1, 8), string.sub(item, 9)
        -- a retry has its first attempt's fingerprint: one pending entry, counted once
        local added = redis.call('HSET', p..':pending:'..me, fp, key..'\\t'..level..'\\t'..ARGV[i]..'\\t'..entry)
        redis.call('DECR', p..':queued')
        redis.call('INCRBY', p..':inflight', added)
        out[#out + 1] = key; out[#out + 1] = fp; out[#out + 1] = entry
      end
    end
  end
end
return {out, nextdue and tostring(nextdue) or false}
"""

# Ends a key's lease: its server's in-flight count goes down with it. Shared by two scripts.
_UNLEASE = """
local function unlease(p, key)
  if redis.call('ZREM', p..':lease', key) == 1 then
    local group = redis.call('HGET', p..':group', key)
    if group and tonumber(redis.call('DECR', p..':groupflight:'..group)) < 0 then
      redis.call('SET', p..':groupflight:'..group, 0)
    end
  end
  redis.call('HDEL', p..':lease_owner', key)
end
"""

# ARGV: prefix, key, part, at_ms, now_ms, levels
RELEASE = _UNLEASE + """
local p, key, at, now = ARGV[1], ARGV[2], tonumber(ARGV[4]), tonumber(ARGV[5])
unlease(p, key)
local na = tonumber(redis.call('GET', p..':na:'..key) or 0)
if na > at then at = na end
if at > now then redis.call('SET', p..':na:'..key, at, 'PX', math.ceil(at - now) + 1) end
for l = 0, tonumber(ARGV[6]) - 1 do
  if redis.call('LLEN', p..':q:'..key..':'..l) > 0 then
    redis.call('ZADD', p..':ready:'..ARGV[3], at, key)
    break
  end
end
return 1
"""

# ARGV: prefix, key, part, until_ms, now_ms
DEFER = """
local p, key, untl, now = ARGV[1], ARGV[2], tonumber(ARGV[4]), tonumber(ARGV[5])
local na = tonumber(redis.call('GET', p..':na:'..key) or 0)
if untl > na and untl > now then redis.call('SET', p..':na:'..key, untl, 'PX', math.ceil(untl - now) + 1) end
redis.call('ZADD', p..':ready:'..ARGV[3], 'XX', 'GT', untl, key)
return 1
"""

# ARGV: prefix, worker, fp...
COMPLETE = """
local p = ARGV[1]
local n = 0
for i = 3, #ARGV do n = n + redis.call('HDEL', p..':pending:'..ARGV[2], ARGV[i]) end
if n > 0 then redis.call('DECRBY', p..':inflight', n) end
return n
"""

# ARGV: prefix, worker, now_ms, worker_ttl_ms, partition_ttl_ms, partitions
# Renews the worker, then holds ceil(partitions / live workers) partitions: gives back extras,
# claims free ones. Returns the partitions held.
HEARTBEAT = """
local p, me, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local wttl, pttl, parts = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
redis.call('ZADD', p..':workers', now + wttl, me)
local live = redis.call('ZCOUNT', p..':workers', now, '+inf')
local target = math.ceil(parts / math.max(live, 1))
local owned = {}
for i = 0, parts - 1 do
  if redis.call('GET', p..':owner:'..i) == me then owned[#owned + 1] = i end
end
while #owned > target do
  redis.call('DEL', p..':owner:'..table.remove(owned))
end
for _, i in ipairs(owned) do redis.call('PEXPIRE', p..':owner:'..i, pttl) end
for i = 0, parts - 1 do
  if #owned >= target then break end
  if redis.call('SET', p..':owner:'..i, me, 'NX', 'PX', pttl) then owned[#owned + 1] = i end
end
return owned
"""

# ARGV: prefix, now_ms, levels, worker_or_empty, partitions
# Workers whose heartbeat expired (or the named one, leaving): their pending entries go back to
# the head of their queues, their hosts and partitions are released. Leases past expiry are too.
# Returns the number of entries put back.
REAP = _UNLEASE + """
local p, now, levels, leaving = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local dead = redis.call('ZRANGEBYSCORE', p..':workers', '-inf', '('..now)
if leaving ~= '' then dead[#dead + 1] = leaving end
local back = 0
local function ready(key, part)
  if not redis.call('ZSCORE', p..':lease', key) then
    local na = tonumber(redis.call('GET', p..':na:'..key) or now)
    redis.call('ZADD', p..':ready:'..part, 'NX', math.max(na, now), key)
  end
end
local parts_of = {}
for _, w in ipairs(dead) do
  local pending = redis.call('HGETALL', p..':pending:'..w)
  for i = 1, #pending, 2 do
    local fp, v = pending[i], pending[i + 1]
    local t1 = string.find(v, '\\t', 1, true)
    local t2 = string.find(v, '\\t', t1 + 1, true)
    local t3 = string.find(v, '\\t', t2 + 1, true)
    local key, level, part = string.sub(v, 1, t1 - 1), string.sub(v, t1 + 1, t2 - 1), string.sub(v, t2 + 1, t3 - 1)
    redis.call('LPUSH', p..':q:'..key..':'..level, fp..string.sub(v, t3 + 1))
    parts_of[key] = part
    back = back + 1
  end
  if #pending > 0 then
    redis.call('INCRBY', p..':queued', #pending / 2)
    redis.call('DECRBY', p..':inflight', #pending / 2)
  end
  redis.call('DEL', p..':pending:'..w)
  redis.call('ZREM', p..':workers', w)
  for i = 0, tonumber(ARGV[5]) - 1 do
    if redis.call('GET', p..':owner:'..i) == w then redis.call('DEL', p..':owner:'..i) end
  end
  local owners = redis.call('HGETALL', p..':lease_owner')
  for i = 1, #owners, 2 do
    local tab = string.find(owners[i + 1], '\\t', 1, true)
    if string.sub(owners[i + 1], 1, tab - 1) == w then
      unlease(p, owners[i])
      parts_of[owners[i]] = string.sub(owners[i + 1], tab + 1)
    end
  end
end
local expired = redis.call('ZRANGEBYSCORE', p..':lease', '-inf', '('..now)
for _, key in ipairs(expired) do
  local owner = redis.call('HGET', p..':lease_owner', key)
  unlease(p, key)
  if owner then parts_of[key] = string.sub(owner, string.find(owner, '\\t', 1, true) + 1) end
end
for key, part in pairs(parts_of) do
  for l = 0, levels - 1 do
    if redis.call('LLEN', p..':q:'..key..':'..l) > 0 then ready(key, part); break end
  end
end
return {back, #expired}
"""

# KEYS[1]: the bitmap; ARGV: offset...  Returns 1 if every bit was set. BLOOM_CHECK only reads.
BLOOM_CHECK = """
local get = {KEYS[1]}
for i = 1, #ARGV do get[#get + 1] = 'GET'; get[#get + 1] = 'u1'; get[#get + 1] = ARGV[i] end
for _, b in ipairs(redis.call('BITFIELD_RO', unpack(get))) do if b == 0 then return 0 end end
return 1
"""


BLOOM_ADD = """
local set = {KEYS[1]}
for i = 1, #ARGV do set[#set + 1] = 'SET'; set[#set + 1] = 'u1'; set[#set + 1] = ARGV[i]; set[#set + 1] = 1 end
for _, b in ipairs(redis.call('BITFIELD', unpack(set))) do if b == 0 then return 0 end end
return 1
"""

