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
import java.util.concurrent.CompletableFuture;
import org.apache.bookkeeper.mledger.AsyncCallbacks;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.test.MockedBookKeeperTestCase;
import org.testng.annotations.Test;

/**
 * A cursor closed cleanly writes its state, batch-index acks included, to the metadata store. Recovery
 * from that record must keep them: a partial batch ack reported complete is not lost at the next load.
 */
public class ManagedCursorBatchIndexRecoveryTest extends MockedBookKeeperTestCase {

    @Test(timeOut = 60_000)
    public void testClosedCursorKeepsItsPartialBatchAcks() throws Exception {
        ManagedLedgerConfig config = new ManagedLedgerConfig();
        ManagedLedger ledger = factory.open("closed-keeps-batch-acks", config);
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        Position[] p = new Position[8];
        for (int i = 0; i < p.length; i++) {
            p[i] = ledger.addEntry(("entry-" + i).getBytes());
        }
        cursor.markDelete(p[4]);
        // Of the batch at p6, index 2 stays unacknowledged: the other indexes are acked.
        long[] unacked = {0b100};
        CompletableFuture<Void> deleted = new CompletableFuture<>();
        cursor.asyncDelete(AckSetStateUtil.createPositionWithAckSet(p[6].getLedgerId(), p[6].getEntryId(), unacked),
                new AsyncCallbacks.DeleteCallback() {
                    @Override
                    public void deleteComplete(Object ctx) {
                        deleted.complete(null);
                    }

                    @Override
                    public void deleteFailed(ManagedLedgerException exception, Object ctx) {
                        deleted.completeExceptionally(exception);
                    }
                }, null);
        deleted.get();
        cursor.close();

        // A restarted broker: a second factory over the same BookKeeper and metadata store.
        ManagedLedgerFactoryImpl restarted = new ManagedLedgerFactoryImpl(metadataStore, bkc);
        try {
            ManagedCursorImpl recovered = (ManagedCursorImpl) restarted.open("closed-keeps-batch-acks", config)
                    .openCursor("c1");
            assertEquals(recovered.getDeletedBatchIndexesAsLongArray(p[6]), unacked,
                    "a batch ack reported complete, lost at the next load");
        } finally {
            restarted.shutdown();
        }
    }
}
