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
import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerFactoryConfig;
import org.apache.bookkeeper.mledger.Position;
import org.testng.annotations.Test;

/**
 * A broker that lost its topic to another broker (paused past its metadata session, say) must not report a
 * cursor write durable once the new owner has recovered the cursor. Recovery fences the cursor ledger (its
 * recovery open) and reads the cursor's znode; upstream's new owner does not write the znode, so the old owner's
 * record written there with the version it read before the takeover is accepted: reported durable, never read by
 * the new owner (which delivers those messages again), and the cause of the new owner's own next update failing
 * on the version. Seen on a real 5.0.0-M1 cluster with our jars: the old owner's close completed 199 acks it held,
 * all delivered again by the new owner ({@code ClusterReceiptTest}, scenario b). Ours: the new owner writes the
 * znode back with the version it read before it recovers, so every such record fails on the version. The new
 * owner here is a second factory over the same metadata store and bookies ({@link #crashAndRecover}).
 */
public class CursorFencedByTakeoverBenchTest extends CursorBenchBase {
    private static final double NO_PERMIT_RATE = 0.001;

    /**
     * The old owner's write to its fenced cursor ledger fails, and its fallback to the znode too. The mock
     * BookKeeper does not fence a ledger its recovery open reads: the old owner's add is refused as a bookie
     * refuses it after that open.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aMarkDeleteToTheFencedCursorLedgerIsNotReportedDurableThroughTheZnode() throws Exception {
        Scenario s = new Scenario("taken-over-fenced-ledger", false);
        ManagedCursorImpl newOwner = s.crash();
        bkc.failNow(BKException.Code.LedgerFencedException);
        assertNotDurableOnTheOldOwner(s, old -> s.cursor.asyncMarkDelete(s.p.get(6), s.probe.markDelete(old), null));
        assertNewOwnerWritesAndRecovers(s, newOwner);
    }

    /** A cursor with no cursor ledger names a new one in the znode: refused too. */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aNewCursorLedgerOfTheOldOwnerIsNotNamedInTheZnode() throws Exception {
        Scenario s = new Scenario("taken-over-no-ledger", true);
        ManagedCursorImpl newOwner = s.crash();
        assertNotDurableOnTheOldOwner(s, old -> s.cursor.asyncDelete(s.p.get(6), s.probe.delete(old), null));
        assertNewOwnerWritesAndRecovers(s, newOwner);
    }

    /** The old owner's cursor properties after the takeover are not written. */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void theOldOwnersCursorPropertiesAreNotWritten() throws Exception {
        Scenario s = new Scenario("taken-over-properties", false);
        ManagedCursorImpl newOwner = s.crash();
        Throwable properties = s.cursor.putCursorProperty("k", "old-owner").handle((v, e) -> e).get();
        assertTrue(properties != null, "the old owner wrote a cursor property after the takeover");
        assertNewOwnerWritesAndRecovers(s, newOwner);
    }

    /**
     * The old owner's close writes the ack it held (throttled: applied, accepted, not durable) straight to the
     * znode, with no cursor-ledger write before it to learn of a fence: refused, and the ack fails. Fork only: on
     * upstream the throttled ack completes at once (apache/pulsar#26484).
     */
    @Test(groups = FORK_ONLY, timeOut = 60_000)
    public void theOldOwnersCloseDoesNotCompleteAHeldAck() throws Exception {
        String name = "taken-over-close";
        ManagedLedger ledger = factory.open(name, new ManagedLedgerConfig().setThrottleMarkDelete(NO_PERMIT_RATE));
        ManagedCursorImpl oldOwner = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = openWithEntries(ledger, oldOwner, 10);
        markDeleteTakingThePermit(oldOwner, p.get(4), Map.of());
        CallbackProbe probe = new CallbackProbe(oldOwner);
        CallbackProbe.Outcome held = probe.newOutcome("delete(p6), throttled");
        oldOwner.asyncDelete(p.get(6), probe.delete(held), null);
        await().atMost(WAIT).until(held.accepted::isDone);
        ManagedCursorImpl newOwner = crashAndRecover(name, "c1");
        try {
            oldOwner.close();
        } catch (Exception expected) {
            // Its record is refused: the close fails, and with it the ack it held.
        }
        await().atMost(WAIT).until(held.future::isDone);
        assertFalse(held.succeeded(), "the old owner's close reported delete(p6) durable after the takeover");
        assertEquals(held.calls.get(), 1);
        assertEquals(probe.violations, List.of());
        assertEquals(newOwner.getMarkDeletedPosition(), p.get(4));
        newOwner.markDelete(p.get(5));
        assertEquals(crashAndRecover(name, "c1").getMarkDeletedPosition(), p.get(5));
    }

    /**
     * A compressed cursor record with properties is recovered, written back as it was read, and recovered again:
     * its strings are not read from the buffer they were parsed from, which the parse released (4.2, 5.0).
     */
    @Test(groups = FORK_ONLY, timeOut = 60_000)
    public void aCompressedCursorRecordWithPropertiesIsRecoveredAfterItsWriteBack() throws Exception {
        ManagedLedgerFactoryConfig compressing = new ManagedLedgerFactoryConfig();
        compressing.setManagedCursorInfoCompressionType("LZ4");
        List<ManagedLedgerFactoryImpl> factories = List.of(
                new ManagedLedgerFactoryImpl(metadataStore, bkc, compressing),
                new ManagedLedgerFactoryImpl(metadataStore, bkc, compressing),
                new ManagedLedgerFactoryImpl(metadataStore, bkc, compressing));
        crashFactories.addAll(factories);
        String name = "compressed-write-back";
        ManagedLedger ledger = factories.get(0).open(name, config());
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = openWithEntries(ledger, cursor, 10);
        cursor.markDelete(p.get(4), Map.of("CompactedTopicLedger", 7L));
        cursor.putCursorProperty("k", "v").get();
        // The close records the position in the znode itself, compressed, with both kinds of properties.
        cursor.close();
        for (ManagedLedgerFactoryImpl next : factories.subList(1, 3)) {
            ManagedCursorImpl recovered = (ManagedCursorImpl) next.open(name, config()).openCursor("c1");
            assertEquals(recovered.getMarkDeletedPosition(), p.get(4));
            assertEquals(recovered.getProperties(), Map.of("CompactedTopicLedger", 7L));
            assertEquals(recovered.getCursorProperties(), Map.of("k", "v"));
        }
    }

    private static void assertNotDurableOnTheOldOwner(Scenario s,
            Consumer<CallbackProbe.Outcome> write) {
        CallbackProbe.Outcome old = s.probe.newOutcome("the old owner's ack");
        write.accept(old);
        await().atMost(WAIT).until(old.future::isDone);
        assertFalse(old.succeeded(), "the old owner reported its ack durable after the new owner recovered the"
                + " cursor at p4");
        assertEquals(old.calls.get(), 1);
        assertEquals(s.probe.violations, List.of());
    }

    /**
     * The new owner's mark-delete (p5) and a property are written (the old owner moved no version under it), and
     * a crash after them recovers both.
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
