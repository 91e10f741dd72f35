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

import org.apache.bookkeeper.mledger.AsyncCallbacks.MarkDeleteCallback;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;

/**
 * The mark-delete callback of a cursor reset. Its type is what makes the reset's operation a
 * barrier in the pending mark-delete queue ({@link MarkDeleteQueue}).
 *
 * <p>Its write records the state the reset leaves, not the live one: the reset's state change clears
 * every individual ack and batch index (keeping only the new read position's), and runs only once
 * that write is durable, so a crash in between must not bring the cleared acks back.
 *
 * <p>The reset keeps going through {@code internalAsyncMarkDelete(...)}, so that cursors overriding it
 * ({@code NonDurableCursorImpl}) still see the reset; only durable cursors treat it as a barrier.
 */
final class CursorResetBarrier implements MarkDeleteCallback {
    private final MarkDeleteCallback delegate;
    final Position newReadPosition;

    CursorResetBarrier(MarkDeleteCallback delegate, Position newReadPosition) {
        this.delegate = delegate;
        this.newReadPosition = newReadPosition;
    }

    static boolean isBarrier(MarkDeleteCallback callback) {
        return callback instanceof CursorResetBarrier;
    }

    static CursorResetBarrier of(MarkDeleteCallback callback) {
        return callback instanceof CursorResetBarrier ? (CursorResetBarrier) callback : null;
    }

    @Override
    public void markDeleteComplete(Object ctx) {
        delegate.markDeleteComplete(ctx);
    }

    @Override
    public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
        delegate.markDeleteFailed(exception, ctx);
    }
}
