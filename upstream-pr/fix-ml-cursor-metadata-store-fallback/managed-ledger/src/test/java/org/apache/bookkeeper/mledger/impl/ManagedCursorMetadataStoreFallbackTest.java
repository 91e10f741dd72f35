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
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;
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
 * A cursor whose cursor ledger cannot be created (bookies down or read-only) persists its mark-delete in the
 * metadata store (#20935), also when it is behind the tip (#26485): only a caught-up cursor did, so a
 * backlogged one failed its acks and, once the bookies were back, had everything since its last record
 * delivered again.
 */
public class ManagedCursorMetadataStoreFallbackTest extends MockedBookKeeperTestCase {

    @Test(timeOut = 20000)
    public void testBackloggedCursorPersistsItsAcksInTheMetadataStore() throws Exception {
        ManagedLedgerConfig config = new ManagedLedgerConfig();
        ManagedLedger ledger = factory.open("backlogged-fallback", config);
        // A new cursor has no cursor ledger until its first mark-delete creates one.
        ManagedCursor cursor = ledger.openCursor("c1");
        List<Position> p = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            p.add(ledger.addEntry(("entry-" + i).getBytes()));
        }

        // The creation of the cursor ledger fails; p7..p9 stay after the mark-delete position.
        bkc.failNow(BKException.Code.NotEnoughBookiesException);
        assertNull(markDelete(cursor, p.get(6)), "markDelete(p6) with no cursor ledger and p7..p9 after it");
        bkc.failNow(BKException.Code.NotEnoughBookiesException);
        assertNull(delete(cursor, p.get(8)), "delete(p8) with no cursor ledger");

        ManagedLedgerFactory restarted = new ManagedLedgerFactoryImpl(metadataStore, bkc);
        try {
            ManagedCursor recovered = restarted.open("backlogged-fallback", config).openCursor("c1");
            assertEquals(recovered.getMarkDeletedPosition(), p.get(6));
            assertTrue(recovered.isMessageDeleted(p.get(8)));
            assertFalse(recovered.isMessageDeleted(p.get(7)));
        } finally {
            restarted.shutdown();
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

    private static Throwable delete(ManagedCursor cursor, Position position) throws Exception {
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        cursor.asyncDelete(position, new AsyncCallbacks.DeleteCallback() {
            @Override
            public void deleteComplete(Object ctx) {
                outcome.complete(null);
            }

            @Override
            public void deleteFailed(ManagedLedgerException exception, Object ctx) {
                outcome.complete(exception);
            }
        }, null);
        return outcome.get(10, TimeUnit.SECONDS);
    }
}
