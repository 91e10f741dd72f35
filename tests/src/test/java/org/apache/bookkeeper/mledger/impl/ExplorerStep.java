/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *   http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing,
 * software distributed under the License is distributed on an
 * "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 * KIND, either express or implied.  See the License for the
 * specific language governing permissions and limitations
 * under the License.
 */
package org.apache.bookkeeper.mledger.impl;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Random;

/**
 * One step of an explored schedule: an operation on the cursor or an event of its environment. A seed
 * decides the whole schedule up front, from the random generator alone (never from the cursor's state), so
 * that a seed replays the same steps.
 */
final class ExplorerStep {
    enum Kind {
        MARK_DELETE, MARK_DELETE_PROPERTIES, DELETE, DELETE_LIST, BATCH_ACK, RESET, FLUSH, THROTTLE, SKIP,
        CLEAR_BACKLOG, PUT_PROPERTY, HOLD_READ, RELEASE_READ, HOLD_ADD, COMPLETE_HELD_ADD, FAIL_HELD_ADD,
        FAIL_NEXT_ADD, FAIL_METADATA, FAIL_CREATE, CLOSE, DRAIN, CRASH, PARK, RELEASE_PARKED
    }

    // One range or batch-indexed entry per record: a second hole passes it.
    static final int SMALL_CAP = 1;
    // Parked acks (standard mix, durable cursors): how often an ack is parked, and for how many steps at most.
    static final int PARK_ONE_IN = 4;
    static final int PARKED_STEPS_MAX = 4;
    // The cursor ledger rolls over once it holds more than this many records, so that writes are issued, held
    // and failed across a switch: the new ledger's creation, its first record, the metadata-store update.
    static final int SWITCH_AFTER = 2;

    // Relative weights. A non-durable cursor writes nothing: no flush, no cursor property, no write faults,
    // and nothing for a crash to recover.
    private static final Kind[] DURABLE_TABLE = table(new Object[][] {
            {Kind.MARK_DELETE, 9}, {Kind.DELETE, 10}, {Kind.DELETE_LIST, 4}, {Kind.BATCH_ACK, 4},
            {Kind.RESET, 8}, {Kind.FLUSH, 5}, {Kind.THROTTLE, 4}, {Kind.SKIP, 2}, {Kind.CLEAR_BACKLOG, 1},
            {Kind.PUT_PROPERTY, 2}, {Kind.HOLD_READ, 7}, {Kind.RELEASE_READ, 4}, {Kind.HOLD_ADD, 7},
            {Kind.COMPLETE_HELD_ADD, 4}, {Kind.FAIL_HELD_ADD, 2}, {Kind.FAIL_NEXT_ADD, 3}, {Kind.FAIL_METADATA, 3},
            {Kind.CLOSE, 2}, {Kind.CRASH, 2}});
    private static final Kind[] NON_DURABLE_TABLE = table(new Object[][] {
            {Kind.MARK_DELETE, 9}, {Kind.DELETE, 10}, {Kind.DELETE_LIST, 4}, {Kind.BATCH_ACK, 4},
            {Kind.RESET, 8}, {Kind.THROTTLE, 3}, {Kind.SKIP, 2}, {Kind.CLEAR_BACKLOG, 1},
            {Kind.HOLD_READ, 7}, {Kind.RELEASE_READ, 4}, {Kind.CLOSE, 2}});
    // The durability mix: no resets (a reset exempts every ack issued before it completed from the durability
    // check) and no close; throttled acks, held and completed cursor-ledger adds, flushes and crashes instead.
    private static final Kind[] DURABILITY_TABLE = table(new Object[][] {
            {Kind.MARK_DELETE, 6}, {Kind.DELETE, 12}, {Kind.DELETE_LIST, 3}, {Kind.BATCH_ACK, 3},
            {Kind.FLUSH, 8}, {Kind.SKIP, 1}, {Kind.CLEAR_BACKLOG, 1}, {Kind.PUT_PROPERTY, 1},
            {Kind.HOLD_READ, 2}, {Kind.RELEASE_READ, 1}, {Kind.HOLD_ADD, 10}, {Kind.COMPLETE_HELD_ADD, 8},
            {Kind.FAIL_HELD_ADD, 1}, {Kind.FAIL_NEXT_ADD, 1}, {Kind.FAIL_METADATA, 1}, {Kind.CRASH, 2}});

    /**
     * A schedule's mix of steps, chosen per seed. {@code STANDARD}: every step kind. {@code DURABILITY} (a third
     * of the durable cursors): the limiter without permits from the first step, no reset or close, and a crash
     * at the latest after the last step, so that every ack that completes is checked against the recovered state;
     * a mark-delete to an even entry carries mark-delete properties, and in a third of them the BookKeeper
     * client refuses its next operation before the first write (the cursor-ledger creation: the cursor falls back
     * to the metadata store); in half of them the cursor record's caps are {@link #SMALL_CAP} (ranges in the
     * cursor ledger and the metadata store, batch indexes), so that records leave acks out; and half of them run
     * a second time with a {@link Kind#DRAIN} before the crash ({@link Plan#drainVariant}), which checks that
     * nothing waits for a write that will never come (a crash fails what is still held, and would hide it).
     *
     * <p>Across both mixes, a third of the durable cursors roll their cursor ledger over every
     * {@link #SWITCH_AFTER} + 1 records.
     */
    enum Profile {
        STANDARD("standard"), DURABILITY("durability");

        final String label;

        Profile(String label) {
            this.label = label;
        }
    }

    final Kind kind;
    // The entry index (position p[a]), a count, or unused.
    final int a;
    // More entry indexes (DELETE_LIST).
    final int[] more;
    // BATCH_ACK: the batch indexes still unacknowledged after this ack (8-message batches).
    final long remaining;

    private ExplorerStep(Kind kind, int a, int[] more, long remaining) {
        this.kind = kind;
        this.a = a;
        this.more = more;
        this.remaining = remaining;
    }

    private static Kind[] table(Object[][] weights) {
        List<Kind> t = new ArrayList<>();
        for (Object[] w : weights) {
            for (int i = 0; i < (int) w[1]; i++) {
                t.add((Kind) w[0]);
            }
        }
        return t.toArray(new Kind[0]);
    }

    /** The schedule of one seed: whether the cursor is durable, its mix, then its steps (a crash ends it). */
    static final class Plan {
        final long seed;
        final boolean durable;
        final Profile profile;
        final int entries;
        // The record caps (null: the defaults).
        final Integer cap;
        // The cursor ledger's records before it rolls over (null: the default).
        final Integer switchAfter;
        final List<ExplorerStep> steps;

        Plan(long seed, boolean durable, Profile profile, int entries, Integer cap, Integer switchAfter,
                List<ExplorerStep> steps) {
            this.seed = seed;
            this.durable = durable;
            this.profile = profile;
            this.entries = entries;
            this.cap = cap;
            this.switchAfter = switchAfter;
            this.steps = steps;
        }

        /** The same seed's set-up with other steps (shrinking). */
        Plan withSteps(List<ExplorerStep> other) {
            return new Plan(seed, durable, profile, entries, cap, switchAfter, other);
        }

        /**
         * The durability mix, half of its seeds: the same schedule with a {@link Kind#DRAIN} before the crash that
         * ends it, run besides it (in place of it, a drain would settle what the crash is there to catch in
         * flight); null for the other seeds.
         */
        Plan drainVariant() {
            if (profile != Profile.DURABILITY || !drainsBeforeCrash(seed)) {
                return null;
            }
            List<ExplorerStep> drained = new ArrayList<>(steps);
            drained.add(drained.size() - 1, new ExplorerStep(Kind.DRAIN, 0, null, 0));
            return withSteps(drained);
        }
    }

    // The mix comes from its own generator: a STANDARD seed's steps are those it had before mixes existed.
    private static Random mixRandom(long seed) {
        return new Random(seed * 0x9E3779B97F4A7C15L + 11);
    }

    private static Profile profileOf(long seed) {
        return mixRandom(seed).nextInt(3) == 0 ? Profile.DURABILITY : Profile.STANDARD;
    }

    // Durability mix: whether the cursor-ledger creation is refused (the second draw of the mix's generator).
    private static boolean creationRefused(long seed) {
        Random mix = mixRandom(seed);
        mix.nextInt(3);
        return mix.nextInt(3) == 1;
    }

    // Durability mix: whether the record caps are small (the third draw).
    private static boolean smallCaps(long seed) {
        Random mix = mixRandom(seed);
        mix.nextInt(3);
        mix.nextInt(3);
        return mix.nextBoolean();
    }

    // Any durable cursor: whether its cursor ledger rolls over every few records (the fourth draw).
    private static boolean ledgerSwitches(long seed) {
        Random mix = mixRandom(seed);
        mix.nextInt(3);
        mix.nextInt(3);
        mix.nextBoolean();
        return mix.nextInt(3) == 0;
    }

    // Durability mix: whether the schedule also runs with a drain before its crash (the fifth draw).
    private static boolean drainsBeforeCrash(long seed) {
        Random mix = mixRandom(seed);
        mix.nextInt(3);
        mix.nextInt(3);
        mix.nextBoolean();
        mix.nextInt(3);
        return mix.nextBoolean();
    }

    static Plan plan(long seed, int minSteps, int maxSteps, int entries) {
        Random rnd = new Random(seed);
        boolean durable = rnd.nextInt(6) != 0;
        Profile profile = durable ? profileOf(seed) : Profile.STANDARD;
        Kind[] t = !durable ? NON_DURABLE_TABLE : profile == Profile.DURABILITY ? DURABILITY_TABLE : DURABLE_TABLE;
        int n = minSteps + rnd.nextInt(maxSteps - minSteps + 1);
        List<ExplorerStep> steps = new ArrayList<>();
        if (profile == Profile.DURABILITY) {
            steps.add(new ExplorerStep(Kind.THROTTLE, 0, null, 0));
            if (creationRefused(seed)) {
                steps.add(new ExplorerStep(Kind.FAIL_CREATE, 0, null, 0));
            }
        }
        int again = -1;
        for (int i = 0; i < n; i++) {
            ExplorerStep step = step(t[rnd.nextInt(t.length)], rnd, entries);
            // In the durability mix, a mark-delete to an even entry carries properties (no draw of its own: the
            // mix's other steps stay as they were).
            if (profile == Profile.DURABILITY && step.kind == Kind.MARK_DELETE && step.a % 2 == 0) {
                step = new ExplorerStep(Kind.MARK_DELETE_PROPERTIES, step.a, null, 0);
                // One to an entry divisible by 4 is issued again after the next flush, with other properties: the
                // flush's write of the first may be queued behind a read, a record at the second's position.
                if (step.a % 4 == 0) {
                    again = step.a;
                }
            }
            steps.add(step);
            if (step.kind == Kind.FLUSH && again >= 0) {
                steps.add(new ExplorerStep(Kind.MARK_DELETE_PROPERTIES, again, null, 0));
                again = -1;
            }
            if (step.kind == Kind.CRASH) {
                break;
            }
        }
        if (profile == Profile.DURABILITY && steps.get(steps.size() - 1).kind != Kind.CRASH) {
            steps.add(new ExplorerStep(Kind.CRASH, 0, null, 0));
        }
        if (durable && profile == Profile.STANDARD) {
            steps = withParkedAcks(seed, steps);
        }
        Integer cap = profile == Profile.DURABILITY && smallCaps(seed) ? SMALL_CAP : null;
        Integer switchAfter = durable && ledgerSwitches(seed) ? SWITCH_AFTER : null;
        return new Plan(seed, durable, profile, entries, cap, switchAfter, steps);
    }

    /**
     * The standard mix of a durable cursor, with parked acks: before an ack, one time in {@link #PARK_ONE_IN}, a
     * {@link Kind#PARK} (the ack runs on a second thread that stops between its apply and the queue) and, one to
     * {@link #PARKED_STEPS_MAX} steps later, a {@link Kind#RELEASE_PARKED} (a close, the end of the schedule, the
     * recovery after a crash or the next park release it otherwise). A parked mark-delete to an even entry carries
     * properties: a later ack may write a record before it reaches the queue. One time in two the next step is a
     * mark-delete at its position with properties of its own: applied after it, and queued before it. Drawn from a
     * generator of their own, so that the steps of the seed are those it had without parked acks, with these
     * inserted.
     */
    private static List<ExplorerStep> withParkedAcks(long seed, List<ExplorerStep> steps) {
        Random park = new Random(seed * 0x2545F4914F6CDD1DL + 29);
        List<ExplorerStep> out = new ArrayList<>();
        int releaseIn = -1;
        for (ExplorerStep step : steps) {
            if (releaseIn == 0) {
                out.add(new ExplorerStep(Kind.RELEASE_PARKED, 0, null, 0));
            }
            releaseIn--;
            ExplorerStep atItsPosition = null;
            if (releaseIn < 0 && isAck(step.kind) && park.nextInt(PARK_ONE_IN) == 0) {
                out.add(new ExplorerStep(Kind.PARK, 0, null, 0));
                if (step.kind == Kind.MARK_DELETE && step.a % 2 == 0) {
                    step = new ExplorerStep(Kind.MARK_DELETE_PROPERTIES, step.a, null, 0);
                    if (park.nextInt(2) == 0) {
                        atItsPosition = new ExplorerStep(Kind.MARK_DELETE_PROPERTIES, step.a, null, 0);
                    }
                }
                releaseIn = 1 + park.nextInt(PARKED_STEPS_MAX);
            }
            out.add(step);
            if (atItsPosition != null) {
                out.add(atItsPosition);
            }
        }
        return out;
    }

    static boolean isAck(Kind k) {
        return k == Kind.MARK_DELETE || k == Kind.MARK_DELETE_PROPERTIES || k == Kind.DELETE
                || k == Kind.DELETE_LIST || k == Kind.BATCH_ACK;
    }

    private static ExplorerStep step(Kind k, Random rnd, int entries) {
        int a = rnd.nextInt(entries);
        int[] more = null;
        long remaining = 0;
        if (k == Kind.DELETE_LIST) {
            more = new int[] {rnd.nextInt(entries), rnd.nextInt(entries)};
        } else if (k == Kind.SKIP) {
            a = 1 + rnd.nextInt(3);
        } else if (k == Kind.BATCH_ACK) {
            // 1 in 8: the last indexes, the entry becomes fully acknowledged.
            remaining = rnd.nextInt(8) == 0 ? 0 : rnd.nextInt(255) + 1;
        }
        return new ExplorerStep(k, a, more, remaining);
    }

    @Override
    public String toString() {
        String text = withArguments();
        if (text == null) {
            text = cursorCall(kind);
        }
        if (text == null) {
            text = environmentEvent(kind);
        }
        return text != null ? text : kind.name();
    }

    /** The acks, the reset and the skip, with their positions or counts; null for the other kinds. */
    private String withArguments() {
        switch (kind) {
            case MARK_DELETE:
                return "markDelete(p" + a + ")";
            case MARK_DELETE_PROPERTIES:
                return "markDelete(p" + a + ", {md=" + a + "})";
            case DELETE:
                return "delete(p" + a + ")";
            case DELETE_LIST:
                return "delete([p" + a + ", p" + more[0] + ", p" + more[1] + "])";
            case BATCH_ACK:
                return "batchAck(p" + a + ", unacked=" + BitSet.valueOf(new long[] {remaining}) + ")";
            case RESET:
                return "reset(p" + a + ")";
            case SKIP:
                return "skipEntries(" + a + ")";
            default:
                return null;
        }
    }

    /** The cursor's calls without arguments of the step; null for the other kinds. */
    private static String cursorCall(Kind kind) {
        switch (kind) {
            case FLUSH:
                return "flush()";
            case THROTTLE:
                return "setThrottleMarkDelete(0.001)";
            case CLEAR_BACKLOG:
                return "clearBacklog()";
            case PUT_PROPERTY:
                return "putCursorProperty(k, v)";
            case CLOSE:
                return "close()";
            default:
                return null;
        }
    }

    /** The events of the cursor's environment: held and failed reads and writes, and the crash. */
    private static String environmentEvent(Kind kind) {
        switch (kind) {
            case HOLD_READ:
                return "holdRead + asyncReadEntries(1)";
            case RELEASE_READ:
                return "releaseRead";
            case HOLD_ADD:
                return "holdNextBookieAdd";
            case COMPLETE_HELD_ADD:
                return "completeFirstHeldAdd";
            case FAIL_HELD_ADD:
                return "failFirstHeldAdd(NotEnoughBookies)";
            case FAIL_NEXT_ADD:
                return "failNextBookieAdd(NotEnoughBookies)";
            case FAIL_METADATA:
                return "failNextCursorMetadataPut";
            case FAIL_CREATE:
                return "bkc.failNow(NotEnoughBookies)";
            case DRAIN:
                return "releaseEverything + flush() + everything settled?";
            case CRASH:
                return "CRASH";
            case PARK:
                return "parkNextAck (its thread stops between its apply and the queue)";
            case RELEASE_PARKED:
                return "releaseParkedAck";
            default:
                return null;
        }
    }
}
