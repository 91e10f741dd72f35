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

import static org.awaitility.Awaitility.await;
import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import java.util.List;
import java.util.Map;
import org.apache.bookkeeper.client.BKException;
import org.testng.annotations.Test;

/**
 * A broker that lost its topic to another broker (paused past its metadata session, say) must not report a
 * cursor write durable once the new owner has recovered the cursor. Recovery opens the cursor ledger, which fences
 * it, and reads the cursor's znode. The old owner's next write to that ledger is refused as fenced; upstream then
 * writes the record to the znode instead, with the version it read before the takeover, and nothing refuses that:
 * the write is reported durable, the new owner never reads it (it delivers those messages again), and the new
 * owner's own next update of the znode fails on the version. Seen on a real 5.0.0-M1 cluster with our jars, where
 * the old owner's close completed 199 acks it held and the new owner delivered all 199 again
 * ({@code ClusterReceiptTest}, scenario b). The new owner here is a second factory over the same metadata store
 * and bookies ({@link #crashAndRecover}). The mock BookKeeper does not fence a ledger its open recovers: the old
 * owner's next cursor-ledger add is refused as a bookie refuses it after that open ({@link #fencedByTheNewOwner}).
 */
public class CursorFencedByTakeoverBenchTest extends CursorBenchBase {

    /** The old owner's mark-delete after the takeover fails; the new owner's own writes succeed. */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aMarkDeleteAfterTheNewOwnerRecoveredTheCursorIsNotReportedDurable() throws Exception {
        Scenario s = new Scenario("fenced-mark-delete", false);
        ManagedCursorImpl newOwner = s.crash();
        fencedByTheNewOwner();
        CallbackProbe.Outcome old = s.probe.newOutcome("markDelete(p6) on the old owner");
        s.cursor.asyncMarkDelete(s.p.get(6), s.probe.markDelete(old), null);
        await().atMost(WAIT).until(old.future::isDone);

        assertFalse(old.succeeded(), "the old owner reported markDelete(p6) durable after the new owner recovered"
                + " the cursor at p4");
        assertEquals(old.calls.get(), 1);
        assertEquals(s.probe.violations, List.of());
        assertNewOwnerWritesAndRecovers(s, newOwner);
    }

    /** The old owner's close after the takeover writes nothing: its held ack is not reported durable. */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void theOldOwnersCloseAfterTheNewOwnerRecoveredTheCursorWritesNoRecord() throws Exception {
        Scenario s = new Scenario("fenced-close", false);
        ManagedCursorImpl newOwner = s.crash();
        fencedByTheNewOwner();
        CallbackProbe.Outcome old = s.probe.newOutcome("delete(p6) on the old owner");
        s.cursor.asyncDelete(s.p.get(6), s.probe.delete(old), null);
        await().atMost(WAIT).until(old.future::isDone);
        try {
            s.cursor.close();
        } catch (Exception expected) {
            // Ours refuses the close's record; upstream writes it. Either way the close itself returns.
        }

        assertFalse(old.succeeded(), "the old owner reported delete(p6) durable after the new owner recovered the"
                + " cursor at p4");
        assertEquals(s.probe.violations, List.of());
        assertNewOwnerWritesAndRecovers(s, newOwner);
    }

    /** The old owner's cursor properties after the takeover are not written either. */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void theOldOwnersCursorPropertiesAfterTheNewOwnerRecoveredTheCursorAreNotWritten() throws Exception {
        Scenario s = new Scenario("fenced-properties", false);
        ManagedCursorImpl newOwner = s.crash();
        fencedByTheNewOwner();
        // The old owner learns of the fence from its next cursor-ledger write.
        CallbackProbe.Outcome old = s.probe.newOutcome("markDelete(p6) on the old owner");
        s.cursor.asyncMarkDelete(s.p.get(6), s.probe.markDelete(old), null);
        await().atMost(WAIT).until(old.future::isDone);
        Throwable properties = s.cursor.putCursorProperty("k", "old-owner").handle((v, e) -> e).get();

        assertTrue(properties != null, "the old owner wrote a cursor property after the takeover");
        assertNewOwnerWritesAndRecovers(s, newOwner);
    }

    /** The next BookKeeper operation, the old owner's add to its cursor ledger, fails as fenced. */
    private void fencedByTheNewOwner() {
        bkc.failNow(BKException.Code.LedgerFencedException);
    }

    /**
     * The new owner's mark-delete (p5) and a property are written (the old owner did not move the znode's version
     * under it), and a crash after them recovers both.
     */
    private void assertNewOwnerWritesAndRecovers(Scenario s, ManagedCursorImpl newOwner) throws Exception {
        assertEquals(newOwner.getMarkDeletedPosition(), s.p.get(4));
        newOwner.markDelete(s.p.get(5));
        newOwner.putCursorProperty("k", "new-owner").get();
        ManagedCursorImpl recovered = s.crash();
        assertEquals(recovered.getMarkDeletedPosition(), s.p.get(5));
        assertEquals(recovered.getCursorProperties(), Map.of("k", "new-owner"));
    }
}
