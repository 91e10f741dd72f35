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
package org.apache.pulsar.broker.service.persistent;

import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.mledger.Position;
import org.apache.pulsar.compaction.CompactedTopicContext;
import org.apache.pulsar.compaction.CompactedTopicImpl;
import org.testng.annotations.Test;

/**
 * Two compaction commits in flight whose outcomes arrive in either order (on 4.x the compactor does not wait for
 * its commit's outcome, and each commit's mark-delete is issued once its ledger is open): the view served is
 * always the one the durable state names, and never one whose ledger the subscription deletes next (it deletes the
 * ledger a recorded commit replaced). {@link CompactionCommits} alone, over a real {@link CompactedTopicImpl}.
 */
public class CompactionCommitsOrderTest extends CompactionCommitBenchBase {

    private CompactionCommits commits;
    private long[] ledgers;
    private CompactionCommits.Commit c1;
    private CompactionCommits.Commit c2;

    /** Compacted ledger 0 recorded at p1, then ledgers 1 (at p3, c1) and 2 (at p6, c2) installed, in flight. */
    private void twoCommitsInFlightOverARecordedOne() throws Exception {
        openCompactionSubscription();
        commits = new CompactionCommits(compactedTopic);
        ledgers = new long[] {compactedLedger(), compactedLedger(), compactedLedger()};
        commits.recorded(commits.install(p.get(1), ledgers[0]));
        c1 = commits.install(p.get(3), ledgers[1]);
        c2 = commits.install(p.get(6), ledgers[2]);
    }

    @Test(groups = FORK_ONLY, timeOut = 60_000)
    public void anEarlierCommitRecordedAfterALaterOneFailedIsServed() throws Exception {
        twoCommitsInFlightOverARecordedOne();
        assertTrue(commits.notRecorded(c2), "the failed later commit puts back the durable view");
        assertServed(p.get(1), ledgers[0], "after the later commit failed");
        commits.recorded(c1);
        assertServed(p.get(3), ledgers[1], "after the earlier commit was recorded: the subscription deletes ledger "
                + ledgers[0] + " (the view that commit replaced) next");
    }

    @Test(groups = FORK_ONLY, timeOut = 60_000)
    public void commitsWhoseOutcomesArriveInOrderServeTheRecordedOne() throws Exception {
        twoCommitsInFlightOverARecordedOne();
        commits.recorded(c1);
        assertServed(p.get(6), ledgers[2], "after the earlier commit was recorded, while the later one is in flight");
        assertTrue(commits.notRecorded(c2), "the failed later commit puts back the durable view");
        assertServed(p.get(3), ledgers[1], "after the later commit failed");
    }

    /**
     * Three commits in flight over a durable view, their outcomes (each recorded or not) arriving in every order,
     * and the subscription deleting, once a commit is recorded, the ledger that commit replaced: the ledger served
     * is never one deleted, and once every outcome arrived the view served is the one the durable state names.
     */
    @Test(groups = FORK_ONLY, timeOut = 120_000)
    public void threeCommitsInEveryOrderOfOutcomesServeTheDurableViewAndNoDeletedLedger() throws Exception {
        openCompactionSubscription();
        long[] ledgers = {compactedLedger(), compactedLedger(), compactedLedger(), compactedLedger()};
        Position[] horizons = {p.get(1), p.get(3), p.get(5), p.get(7)};
        int[][] orders = {{1, 2, 3}, {1, 3, 2}, {2, 1, 3}, {2, 3, 1}, {3, 1, 2}, {3, 2, 1}};
        int cases = 0;
        for (int[] order : orders) {
            for (int recordedMask = 0; recordedMask < 8; recordedMask++) {
                runCase(ledgers, horizons, order, recordedMask);
                cases++;
            }
        }
        assertEquals(cases, 48);
    }

    private void runCase(long[] ledgers, Position[] horizons, int[] order, int recordedMask) throws Exception {
        CompactedTopicImpl view = new CompactedTopicImpl(bookKeeper);
        CompactionCommits commits = new CompactionCommits(view);
        CompactionCommits.Commit[] c = new CompactionCommits.Commit[4];
        c[0] = commits.install(horizons[0], ledgers[0]);
        c[0].previous.get(10, TimeUnit.SECONDS);
        commits.recorded(c[0]);
        for (int i = 1; i <= 3; i++) {
            c[i] = commits.install(horizons[i], ledgers[i]);
        }
        for (int i = 1; i <= 3; i++) {
            c[i].previous.get(10, TimeUnit.SECONDS);
        }
        Set<Long> deleted = new HashSet<>();
        int durable = 0;
        StringBuilder steps = new StringBuilder();
        for (int i : order) {
            if ((recordedMask & (1 << (i - 1))) != 0) {
                commits.recorded(c[i]);
                CompactedTopicContext replaced = c[i].previous.get(10, TimeUnit.SECONDS);
                if (replaced != null) {
                    deleted.add(replaced.getLedger().getId());
                }
                if (i > durable) {
                    durable = i;
                }
                steps.append(" c").append(i).append(" recorded;");
            } else {
                commits.notRecorded(c[i]);
                steps.append(" c").append(i).append(" failed;");
            }
            long served = view.getCompactedTopicContextFuture().get(10, TimeUnit.SECONDS).getLedger().getId();
            assertFalse(deleted.contains(served), "after" + steps + " the view served is ledger " + served
                    + ", which the subscription deleted");
        }
        Position servedHorizon;
        long served;
        synchronized (view) {
            servedHorizon = view.getCompactionHorizon().orElse(null);
            served = view.getCompactedTopicContextFuture().get(10, TimeUnit.SECONDS).getLedger().getId();
        }
        assertEquals(served + "@" + servedHorizon, ledgers[durable] + "@" + horizons[durable],
                "after" + steps + " the view served (ledger@horizon) is the one the durable state names");
    }
}
