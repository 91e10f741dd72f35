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
import static org.testng.Assert.assertTrue;
import java.util.List;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.Position;
import org.testng.annotations.Test;

/**
 * NonDurableCursorImpl overrides internalAsyncMarkDelete: the reset must still reach that override
 * (an open upstream fix, #26318, threw a NullPointerException there) and acks keep working after it.
 */
public class NonDurableCursorResetBenchTest extends CursorBenchBase {

    @Test(timeOut = 60_000)
    public void resetAndAcksOnANonDurableCursor() throws Exception {
        ManagedLedger ledger = factory.open("non-durable-reset", config());
        ManagedCursorImpl durable = (ManagedCursorImpl) ledger.openCursor("keep");
        List<Position> p = openWithEntries(ledger, durable, 10);
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.newNonDurableCursor(p.get(0));
        cursor.markDelete(p.get(4));
        CallbackProbe probe = new CallbackProbe(cursor);
        CallbackProbe.Outcome reset = probe.newOutcome("reset");
        CallbackProbe.Outcome ack = probe.newOutcome("ack");

        cursor.asyncResetCursor(p.get(1), false, probe.reset(reset));
        reset.future.get();
        assertEquals(cursor.getReadPosition(), p.get(1));
        assertEquals(cursor.getMarkDeletedPosition(), ledger.getPreviousPosition(p.get(1)));

        cursor.asyncDelete(p.get(3), probe.delete(ack), null);
        ack.future.get();
        assertTrue(cursor.isMessageDeleted(p.get(3)));
        assertFalse(cursor.isMessageDeleted(p.get(2)));
        cursor.delete(p.get(1));
        cursor.delete(p.get(2));
        assertEquals(cursor.getMarkDeletedPosition(), p.get(3));
        assertEquals(reset.calls.get(), 1);
        assertEquals(ack.calls.get(), 1);
        assertEquals(probe.violations, List.of());
        ManagedCursor same = cursor;
        same.close();
    }
}
