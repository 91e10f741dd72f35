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

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotNull;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.mledger.AsyncCallbacks;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.ManagedLedgerFactory;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.test.MockedBookKeeperTestCase;
import org.testng.annotations.Test;

/**
 * A broker that lost its topic (paused past its metadata session) must not report a cursor write durable once
 * the new owner has recovered the cursor: recovery fences the cursor ledger and reads the cursor's z-node once.
 * The old owner's next ledger write is refused as fenced, and its fallback to the z-node, with the version read
 * before the takeover, was accepted: reported durable, never read by the new owner, and the cause of the new
 * owner's next z-node update failing on its version.
 */
public class ManagedCursorFencedByRecoveryTest extends MockedBookKeeperTestCase {

    @Test(timeOut = 20000)
    public void testOldOwnerWritesNoCursorRecordAfterTheNewOwnerRecoveredIt() throws Exception {
        ManagedLedgerConfig config = new ManagedLedgerConfig();
        ManagedLedger ledger = factory.open("fenced-by-recovery", config);
        ManagedCursor cursor = ledger.openCursor("c1");
        List<Position> p = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            p.add(ledger.addEntry(("entry-" + i).getBytes()));
        }
        // Creates the cursor ledger.
        cursor.markDelete(p.get(4));

        ManagedLedgerFactory newOwner = new ManagedLedgerFactoryImpl(metadataStore, bkc);
        ManagedLedgerFactory restarted = new ManagedLedgerFactoryImpl(metadataStore, bkc);
        try {
            ManagedCursor recovered = newOwner.open("fenced-by-recovery", config).openCursor("c1");
            assertEquals(recovered.getMarkDeletedPosition(), p.get(4));

            // The mock BookKeeper does not fence a ledger its recovery open reads: the old owner's next add is
            // refused as a bookie refuses it after that open.
            bkc.failNow(BKException.Code.LedgerFencedException);
            assertNotNull(markDelete(cursor, p.get(6)),
                    "the old owner reported markDelete(p6) durable after the new owner recovered the cursor");
            assertNotNull(cursor.putCursorProperty("k", "old-owner").handle((v, e) -> e).get(10, TimeUnit.SECONDS),
                    "the old owner wrote a cursor property after the new owner recovered the cursor");

            // The old owner moved no version under the new owner: its own writes succeed and are recovered.
            recovered.markDelete(p.get(5));
            recovered.putCursorProperty("k", "new-owner").get(10, TimeUnit.SECONDS);
            ManagedCursor afterACrash = restarted.open("fenced-by-recovery", config).openCursor("c1");
            assertEquals(afterACrash.getMarkDeletedPosition(), p.get(5));
            assertEquals(afterACrash.getCursorProperties().get("k"), "new-owner");
        } finally {
            restarted.shutdown();
            newOwner.shutdown();
        }
    }

    // The failure the mark-delete completed with, or null.
    private static Throwable markDelete(ManagedCursor cursor, Position position) throws Exception {
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        cursor.asyncMarkDelete(position, new AsyncCallbacks.MarkDeleteCallback() {
            @Override
            public void markDeleteComplete(Object ctx) {
                outcome.complete(null);
            }

            @Override
            public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
                outcome.complete(exception);
            }
        }, null);
        return outcome.get(10, TimeUnit.SECONDS);
    }
}
